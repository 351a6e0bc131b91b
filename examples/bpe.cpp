// examples/bpe.cpp — train a byte-level BPE tokenizer on a text, and encode or decode with it
// (the algorithm: tokenizers/bpe.h) or with any tokenizer load_tokenizer reads
// (tokenizers/tokenizer.h): a tokenizer.json (tapegrad's or Hugging Face's, tokenizers/hf_tokenizer.h),
// or a folder with one or with GPT-2's files.
//
//   ./build/examples/bpe train --data input.txt --vocab-size 1024 --out tok.json
//   ./build/examples/bpe encode --tokenizer tok.json input.txt > ids.txt   (ids on one line)
//   ./build/examples/bpe decode --tokenizer tok.json ids.txt > back.txt    (the bytes, exactly)
//   ./build/examples/bpe encode --tokenizer .cache/gpt2-tokenizer --allow-special input.txt
//   ./build/examples/bpe encode --tokenizer Qwen3-0.6B input.txt       (a Hugging Face folder's tokenizer.json)
//   ./build/examples/bpe render-chat --tokenizer Qwen3-0.6B --messages chat.json --add-generation-prompt --no-thinking
//
// render-chat prints a conversation (a JSON list of {"role", "content"}, or {"messages": [...]})
// exactly as the model sees it: the folder's chat template (tokenizers/chat_template.h, chosen from
// tokenizer_config.json's chat_template, or --chat-format), or with --ids its token ids.
//
// Each prints its time and the bytes per token on stderr.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "io/atomic_file.h"
#include "io/flags.h"
#include "tokenizers/bpe.h"
#include "train/corpus.h"
#include "tokenizers/chat_template.h"
#include "tokenizers/tokenizer.h"
#include "io/json.h"

using namespace tg;

namespace {

struct BpeOptions {
  std::string data, out = "tokenizer.json", tokenizer = "tokenizer.json";
  int64_t vocab_size = 1024;
  bool allow_special = false;  // encode: GPT-2's "<|endoftext|>" in the text is its special token
  std::string file;  // encode / decode: the positional FILE
  // render-chat
  std::string messages, chat_format, date_string;
  bool add_generation_prompt = false, no_thinking = false, ids = false;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void report(const char* what, size_t bytes, size_t tokens, double seconds) {
  std::fprintf(stderr, "bpe %s: %zu bytes, %zu tokens, %.3f bytes per token, %.3f s (%.1f MB/s)\n", what, bytes,
               tokens, tokens ? static_cast<double>(bytes) / static_cast<double>(tokens) : 0.0, seconds,
               static_cast<double>(bytes) / 1e6 / (seconds > 0 ? seconds : 1e-9));
}

int train_command(const BpeOptions& o) {
  if (o.data.empty()) throw UsageError("--data FILE is required");
  const std::string text = train::read_data(o.data);
  const auto start = std::chrono::steady_clock::now();
  const tokenizers::BpeTokenizer tok = tokenizers::BpeTokenizer::train(text, o.vocab_size);
  const double trained = seconds_since(start);
  if (tok.merges().empty()) {
    throw tg::Error("--data " + o.data + ": too small to learn any merge: no pair of bytes occurs twice in it");
  }
  tg::write_file_atomically(o.out, tok.to_json(), "bpe train");
  const size_t tokens = tok.encode(text).size();
  std::fprintf(stderr, "bpe train: %zu merges learned in %.3f s (vocab %lld)%s; wrote %s\n", tok.merges().size(),
               trained, static_cast<long long>(tok.vocab_size()),
               tok.vocab_size() < o.vocab_size ? ", fewer than asked: no pair occurs twice any more" : "",
               o.out.c_str());
  report("train (the text, encoded)", text.size(), tokens, trained);
  return 0;
}

int encode(const BpeOptions& o) {
  const tokenizers::Tokenizer tok = tokenizers::load_tokenizer(o.tokenizer);
  const std::string text = train::read_input(o.file, "");
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int64_t> ids = tok.encode(text, o.allow_special);
  const double seconds = seconds_since(start);
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) line += ' ';
    line += std::to_string(ids[i]);
  }
  std::cout << line << "\n";
  report("encode", text.size(), ids.size(), seconds);
  return 0;
}

int decode(const BpeOptions& o) {
  const tokenizers::Tokenizer tok = tokenizers::load_tokenizer(o.tokenizer);
  const std::string text = train::read_input(o.file, "");
  std::vector<int64_t> ids;
  std::istringstream in(text);
  for (std::string word; in >> word;) {
    const std::optional<int64_t> id = read_integer(word);
    if (!id) throw tg::Error(o.file + ": token " + std::to_string(ids.size()) + " ('" + word + "') is not an integer id");
    ids.push_back(*id);
  }
  const auto start = std::chrono::steady_clock::now();
  const std::string bytes = tok.decode(ids);
  const double seconds = seconds_since(start);
  std::cout.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  std::cout.flush();
  report("decode", bytes.size(), ids.size(), seconds);
  return 0;
}

int render_chat_command(const BpeOptions& o) {
  if (o.messages.empty()) throw UsageError("--messages FILE.json is required");
  const tokenizers::Tokenizer tok = tokenizers::load_tokenizer(o.tokenizer);
  tokenizers::ChatSetup setup = tokenizers::chat_setup(tok, o.chat_format, o.tokenizer);  // its template, bos, eos
  const json::Value doc = json::parse(train::read_input(o.messages, ""), o.messages);
  const json::Value& list = doc.is_object() && doc.contains("messages") ? doc["messages"] : doc;
  tokenizers::ChatOptions& options = setup.options;
  options.add_generation_prompt = o.add_generation_prompt;
  options.enable_thinking = !o.no_thinking;
  options.date_string = o.date_string;
  const tokenizers::ChatFormat format = setup.format;
  const std::string text = tokenizers::render_chat(format, tokenizers::chat_messages_from_json(list, o.messages), options);
  if (!o.ids) {
    std::cout << text;
    return 0;
  }
  const std::vector<int64_t> ids = tok.encode(text, /*allow_special=*/true);
  for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
  std::cout << "\n";
  return 0;
}

// Whether `arg` ("--name") is one of the switches (bool flags, which take no value).
bool is_switch(const std::string& arg, const std::vector<Flag>& table) {
  for (const Flag& f : table) {
    if (arg == "--" + f.name) return std::holds_alternative<bool*>(f.value);
  }
  return false;
}

// args without the one positional FILE (an argument that is neither a flag nor a flag's value).
std::vector<std::string> without_positional(const std::vector<std::string>& args, const std::vector<Flag>& table,
                                            std::string* file) {
  std::vector<std::string> flags;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) == 0 || a == "-h") {
      flags.push_back(a);
      const bool takes_value =
          a.find('=') == std::string::npos && a != "--help" && a != "-h" && !is_switch(a, table);
      if (takes_value && i + 1 < args.size()) flags.push_back(args[++i]);
    } else if (file->empty()) {
      *file = a;
    } else {
      throw UsageError("more than one FILE: '" + *file + "' and '" + a + "'");
    }
  }
  return flags;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string command = argc > 1 ? argv[1] : "";
  BpeOptions o;
  const std::vector<Flag> train_flags = {
      text_flag("data", &o.data, "the text to learn the merges from"),
      int_flag("vocab-size", &o.vocab_size, "tokens in all: 256 bytes + the merges", 256, 65536),
      text_flag("out", &o.out, "where to write the tokenizer (JSON)"),
  };
  const Flag tokenizer_flag = text_flag(
      "tokenizer", &o.tokenizer,
      "a tokenizer.json (bpe train's, train_gpt's, or Hugging Face's byte-level BPE), or a folder with one or with "
      "GPT-2's vocab.json + merges.txt "
      "or encoder.json + vocab.bpe (not both: a folder with a tokenizer.json and GPT-2's files it does not name is "
      "refused)");
  const std::vector<Flag> encode_flags = {
      tokenizer_flag,
      switch_flag("allow-special", &o.allow_special,
                  "GPT-2: the text <|endoftext|> becomes its special token (else it is encoded as plain text); a "
                  "Hugging Face tokenizer.json always matches its added tokens")};
  const std::vector<Flag> decode_flags = {tokenizer_flag};
  const std::vector<Flag> chat_flags = {
      tokenizer_flag,
      text_flag("messages", &o.messages, "the conversation: a JSON list of {\"role\", \"content\"} (or {\"messages\": [...]})"),
      switch_flag("add-generation-prompt", &o.add_generation_prompt, "end with the assistant's header, as for a reply"),
      switch_flag("no-thinking", &o.no_thinking, "Qwen3: enable_thinking false (an empty think block after that header)"),
      switch_flag("ids", &o.ids, "print the token ids instead of the text"),
      text_flag("chat-format", &o.chat_format, "qwen3, qwen2.5, llama3, llama3.1 or tapegrad, instead of the folder's template"),
      text_flag("date-string", &o.date_string, "llama3.1's \"Today Date\" (default: today, as transformers)")};
  Program program;
  if (command == "train") {
    program = {"bpe train", "Learns byte-level BPE merges from --data and writes them to --out.", train_flags};
  } else if (command == "encode") {
    program = {"bpe encode", "bpe encode [flags] FILE: prints FILE's token ids on one line, spaces between.",
               encode_flags};
  } else if (command == "decode") {
    program = {"bpe decode", "bpe decode [flags] IDS_FILE: writes the bytes of the ids in IDS_FILE to stdout.",
               decode_flags};
  } else if (command == "render-chat") {
    program = {"bpe render-chat", "Prints a conversation as the chat template renders it (or its ids).", chat_flags};
  } else if (command == "--help" || command == "-h") {
    // Asked for, the overview is the answer: stdout and exit 0, as every program's --help.
    std::printf(
        "usage: bpe train|encode|decode|render-chat [flags]\n"
        "  train        learns byte-level BPE merges from --data and writes them to --out\n"
        "  encode FILE  prints FILE's token ids with --tokenizer\n"
        "  decode FILE  writes the bytes of the ids in FILE with --tokenizer\n"
        "  render-chat  prints a conversation (--messages) as the chat template renders it\n"
        "bpe <command> --help lists the command's flags.\n");
    return 0;
  } else {
    std::fprintf(stderr, "usage: bpe train|encode|decode|render-chat [flags] (bpe <command> --help lists them)%s\n",
                 command.empty() ? "" : ("; unknown command '" + command + "'").c_str());
    return 2;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  std::vector<std::string> flags;
  try {
    flags = without_positional(args, program.flags, &o.file);
    if ((command == "train" || command == "render-chat") && !o.file.empty())
      throw UsageError("unexpected argument '" + o.file + "'");
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: %s (see --help)\n", program.name.c_str(), e.what());
    return 2;
  }
  std::vector<char*> new_argv{argv[0]};
  for (std::string& f : flags) new_argv.push_back(f.data());
  return run_program(program, static_cast<int>(new_argv.size()), new_argv.data(), [&] {
    if (command == "train") return train_command(o);
    if (command == "render-chat") return render_chat_command(o);
    if (o.file.empty()) throw UsageError("FILE is missing");
    return command == "encode" ? encode(o) : decode(o);
  });
}
