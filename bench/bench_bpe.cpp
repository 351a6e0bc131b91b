// bench/bench_bpe.cpp — byte-level BPE speed (tokenizers/bpe.h): training, encoding and
// decoding a text, one JSON line per vocab size. Its twin bench_bpe_sentencepiece.py times
// SentencePiece's BPE on the same text, where python3-sentencepiece is installed. With --gpt2
// DIR it times GPT-2's tokenizer (tokenizers/gpt2_tokenizer.h, the files in DIR) instead, one
// JSON line; its twin bench_gpt2_tokenizer.mjs times js-tiktoken on the same text. With --hf
// PATH it times a Hugging Face tokenizer.json (tokenizers/hf_tokenizer.h; a file or its folder)
// the same way.
//
//   ./build/bench/bench_bpe --data input.txt --vocab-sizes 512,1024,4096 --repeats 5
//   ./build/bench/bench_bpe --data input.txt --gpt2 .cache/gpt2-tokenizer --repeats 5
//   ./build/bench/bench_bpe --data input.txt --hf .cache/llama3-tokenizer --repeats 5
//
// Each figure is the median of --repeats runs, on one thread. encode starts from a fresh
// tokenizer each time (its chunk cache empty), so it includes building that cache; GPT-2's
// "encode_warm" encodes the text a second time, every chunk then in the cache. MB/s are 10^6
// bytes of text.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "io/flags.h"
#include "io/json.h"
#include "tokenizers/bpe.h"
#include "train/corpus.h"
#include "tokenizers/gpt2_tokenizer.h"
#include "tokenizers/nfc.h"
#include "tokenizers/tokenizer.h"

using namespace tg;
using tg::json::round_to;  // rates to the digits that are not noise

namespace {

struct BenchOptions {
  std::string data;  // empty: the built-in corpus
  std::string vocab_sizes = "512,1024,4096";
  int64_t repeats = 5;
  std::string gpt2;  // a folder with GPT-2's files: time that tokenizer instead
  std::string hf;    // a Hugging Face tokenizer.json (or its folder): time that one instead
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

// A loaded tokenizer (GPT-2's, or a Hugging Face one) encoding the text from a fresh copy (an empty
// chunk cache) and warm, and decoding it: one JSON line. The decoded ids must give back decoded_text:
// the text itself, or its NFC form for a tokenizer that normalizes to NFC (Qwen's).
template <class Loaded>
int run_loaded(const BenchOptions& o, const std::string& text, const Loaded& loaded, const char* name,
               const std::string& decoded_text) {
  const double mb = static_cast<double>(text.size()) / 1e6;
  std::vector<int64_t> ids;
  std::vector<Loaded> fresh(static_cast<size_t>(o.repeats), loaded);  // copied before the clock starts
  size_t next = 0;
  const double encode_s = median_seconds(o.repeats, [&] { ids = fresh[next++].encode(text); });
  const double warm_s = median_seconds(o.repeats, [&] { ids = loaded.encode(text); });
  std::string back;
  const double decode_s = median_seconds(o.repeats, [&] { back = loaded.decode(ids); });
  if (back != decoded_text) throw tg::Error(std::string("bench_bpe: the round trip of ") + name + " lost bytes");
  tg::json::Writer line;
  line.field("bench", name).field("bytes", text.size()).field("tokens", ids.size())
      .field("encode_mb_per_s", round_to(mb / encode_s, 1)).field("encode_warm_mb_per_s", round_to(mb / warm_s, 1))
      .field("decode_mb_per_s", round_to(mb / decode_s, 1))
      .field("bytes_per_token", round_to(static_cast<double>(text.size()) / static_cast<double>(ids.size()), 3));
  std::printf("%s\n", line.str().c_str());
  return 0;
}

int run(const BenchOptions& o) {
  const std::string text = train::read_data(o.data);
  if (!o.gpt2.empty())
    return run_loaded(o, text, tokenizers::Gpt2Tokenizer::from_folder(o.gpt2), "tapegrad gpt2 tokenizer", text);
  if (!o.hf.empty()) {
    const tokenizers::Tokenizer loaded = tokenizers::load_tokenizer(o.hf);
    if (!loaded.hf()) throw UsageError("--hf " + o.hf + ": not a Hugging Face tokenizer.json");
    const tokenizers::HfTokenizer& hf = *loaded.hf();
    return run_loaded(o, text, hf, "tapegrad hf tokenizer.json", hf.normalizes_nfc() ? tokenizers::nfc(text) : text);
  }
  const double mb = static_cast<double>(text.size()) / 1e6;
  std::stringstream list(o.vocab_sizes);
  for (std::string item; std::getline(list, item, ',');) {
    const int64_t vocab = std::stoll(item);
    tokenizers::BpeTokenizer tok = tokenizers::BpeTokenizer::train(text, vocab);
    const double train_s = median_seconds(o.repeats, [&] { tok = tokenizers::BpeTokenizer::train(text, vocab); });
    std::vector<int64_t> ids;
    const double encode_s = median_seconds(o.repeats, [&] {
      const tokenizers::BpeTokenizer fresh = tokenizers::BpeTokenizer::from_merges(tok.merges());  // an empty chunk cache
      ids = fresh.encode(text);
    });
    std::string back;
    const double decode_s = median_seconds(o.repeats, [&] { back = tok.decode(ids); });
    if (back != text) throw tg::Error("bench_bpe: the round trip lost bytes");
    tg::json::Writer line;
    line.field("bench", "tapegrad bpe").field("bytes", text.size()).field("vocab_size", tok.vocab_size())
        .field("merges", tok.merges().size()).field("train_s", round_to(train_s, 4))
        .field("encode_mb_per_s", round_to(mb / encode_s, 1)).field("decode_mb_per_s", round_to(mb / decode_s, 1))
        .field("bytes_per_token", round_to(static_cast<double>(text.size()) / static_cast<double>(ids.size()), 3));
    std::printf("%s\n", line.str().c_str());
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
                         int_flag("repeats", &o.repeats, "runs of each measurement (the median is printed)", 1, 1000),
                         text_flag("gpt2", &o.gpt2, "a folder with GPT-2's files: time GPT-2's tokenizer instead"),
                         text_flag("hf", &o.hf, "a Hugging Face tokenizer.json, or its folder: time it instead")}};
  return run_program(program, argc, argv, [&] { return run(o); });
}
