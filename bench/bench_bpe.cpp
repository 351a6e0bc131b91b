// bench/bench_bpe.cpp — byte-level BPE speed (examples/gpt/bpe.h): training, encoding and
// decoding a text, one JSON line per vocab size. Its twin bench_bpe_sentencepiece.py times
// SentencePiece's BPE on the same text, where python3-sentencepiece is installed.
//
//   ./build/bench/bench_bpe --data input.txt --vocab-sizes 512,1024,4096 --repeats 5
//
// Each figure is the median of --repeats runs. encode starts from a fresh tokenizer each time
// (its chunk cache empty), so it includes building that cache; MB/s are 10^6 bytes of text.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "examples/common/flags.h"
#include "examples/gpt/bpe.h"
#include "examples/gpt/corpus.h"

using namespace tg::examples;

namespace {

struct BenchOptions {
  std::string data;  // empty: the built-in corpus
  std::string vocab_sizes = "512,1024,4096";
  int64_t repeats = 5;
};

template <class F>
double median_seconds(int64_t repeats, F f) {
  std::vector<double> times;
  for (int64_t i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    f();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

int run(const BenchOptions& o) {
  const std::string text = read_data(o.data);
  const double mb = static_cast<double>(text.size()) / 1e6;
  std::stringstream list(o.vocab_sizes);
  for (std::string item; std::getline(list, item, ',');) {
    const int64_t vocab = std::stoll(item);
    BpeTokenizer tok = BpeTokenizer::train(text, vocab);
    const double train_s = median_seconds(o.repeats, [&] { tok = BpeTokenizer::train(text, vocab); });
    std::vector<int64_t> ids;
    const double encode_s = median_seconds(o.repeats, [&] {
      const BpeTokenizer fresh = BpeTokenizer::from_merges(tok.merges());  // an empty chunk cache
      ids = fresh.encode(text);
    });
    std::string back;
    const double decode_s = median_seconds(o.repeats, [&] { back = tok.decode(ids); });
    if (back != text) throw tg::Error("bench_bpe: the round trip lost bytes");
    std::printf("{\"bench\": \"tapegrad bpe\", \"bytes\": %zu, \"vocab_size\": %lld, \"merges\": %zu, "
                "\"train_s\": %.4f, \"encode_mb_per_s\": %.1f, \"decode_mb_per_s\": %.1f, \"bytes_per_token\": %.3f}\n",
                text.size(), static_cast<long long>(tok.vocab_size()), tok.merges().size(), train_s, mb / encode_s,
                mb / decode_s, static_cast<double>(text.size()) / static_cast<double>(ids.size()));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  BenchOptions o;
  const Program program{"bench_bpe",
                        "Times byte-level BPE training, encoding and decoding of a text; one JSON line per vocab size.",
                        {text_flag("data", &o.data, "the text (default: the built-in corpus)"),
                         text_flag("vocab-sizes", &o.vocab_sizes, "comma-separated vocab sizes, each in [256, 65536]"),
                         int_flag("repeats", &o.repeats, "runs of each measurement (the median is printed)", 1, 1000)}};
  return run_program(program, argc, argv, [&] { return run(o); });
}
