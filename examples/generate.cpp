// examples/generate.cpp — write text with a model saved by train_gpt (or converted from PyTorch
// by examples/pytorch/tapegrad_twin/run_folder.py), with a Hugging Face GPT-2 folder, or with a Hugging Face
// Llama / Qwen2 / Qwen3 folder (models/hf/hf_llama.h).
//
//   ./build/examples/generate --ckpt gpt_run --prompt "The old fox" --tokens 200 --temperature 0.8
//   ./build/examples/generate --ckpt gpt2 --prompt-ids 464,1468,21831 --tokens 0 --logits-out logits.safetensors
//   ./build/examples/generate --ckpt sft_run --instruction "Give the plural of mouse." --temperature 0
//   ./build/examples/generate --ckpt Qwen3-0.6B --prompt-ids 785,6722 --tokens 20 --temperature 0 --ids-out ids.json
//   ./build/examples/generate --ckpt Qwen3-0.6B --chat --no-thinking
//   ./build/examples/generate --ckpt Qwen3-0.6B --chat-messages chat.json --temperature 0
//   ./build/examples/generate --ckpt spam_run --classify "You have won a prize, call now"
//
// --chat talks with the model in the terminal (models/generation/chat_session.h): each line typed is a user
// turn; the reply is written as it comes and ends at the chat template's end token (or --tokens);
// the KV cache is kept across turns; /reset starts a new conversation, /quit (or end of input)
// leaves. A turn that leaves no room for a reply in the model's context is dropped with a note,
// and a reply that reaches the end of the context stops there. Only ids the tokenizer can write
// are sampled (a note says when the model's vocabulary is padded past them, as Qwen's is). --chat-messages FILE.json replies once to a conversation (a JSON list of {"role",
// "content"} ending with a user turn, or {"messages": [...]}). The template is the folder's
// (tokenizer_config.json's chat_template, tokenizers/chat_template.h), or --chat-format's; a
// train_gpt run has tapegrad's instruction template.
//
// A Llama / Qwen folder's tokenizer.json (Hugging Face's, tokenizers/hf_tokenizer.h) encodes the
// prompt, with the BOS token first when tokenizer_config.json says so, and writing stops at its
// eos_token. Without a tokenizer.json the prompt is --prompt-ids and the output token ids, one line
// per sample, ending at config.json's eos_token_id (a number). --ignore-eos writes past either.
// --ids-out writes the ids generated after the prompt as a JSON array (with --samples N > 1, an
// array of N arrays), for any model.
//
// The text is printed as it is written (flushed token by token; a character that byte-level BPE
// splits between tokens once it is whole), the same text as when it is done. Writing stops at the
// end-of-text token when the tokenizer has one (GPT-2's <|endoftext|>), which is left out of what is
// printed; --ignore-eos writes all --tokens, the end-of-text tokens included.
//
// --instruction (and --input) writes the prompt with the template instruction fine-tuning trains on
// (tokenizers/chat_template.h: alpaca_prompt).
//
// --logits-out writes the prompt's logits, key "logits", shape (T, vocab), float32: one forward of
// the whole prompt in eval mode, to compare with another implementation's.
//
// --classify TEXT, with a classifier's folder (train_gpt --task classify, or a Hugging Face
// *ForSequenceClassification folder: models/saved_model.h's load_saved_classifier), writes no text:
// it prints the class the model gives TEXT and its probability, then a JSON line of every class's.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "nn/safetensors.h"
#include "autograd/ops.h"
#include "autograd/runtime/parallel.h"
#include "autograd/tape.h"
#include "models/saved_model.h"
#include "models/sequence_classification.h"
#include "io/user_file.h"
#include "tokenizers/chat_template.h"
#include "io/flags.h"
#include "models/generation/generate.h"
#include "models/generation/chat_session.h"
#include "models/hf/hf_llama.h"
#include "io/atomic_file.h"
#include "io/json.h"
#include "nn/quantize.h"

using namespace tg;

namespace {

struct GenerateOptions {
  std::string ckpt = "gpt_run";
  std::string prompt = "\n";
  std::string prompt_ids;  // "464,1468,...": token ids instead of --prompt's text
  std::string logits_out;  // a .safetensors file for the prompt's logits
  std::string ids_out;     // a .json file for the generated ids
  std::string instruction, input;  // an instruction prompt (alpaca_prompt) instead of --prompt
  std::string classify;  // a text for a classifier (train_gpt --task classify) to label
  int64_t tokens = 200;
  tg::models::SamplingOptions sampling{.temperature = 0.8};
  int64_t seed = 1337;
  int64_t samples = 1;
  bool ignore_eos = false;  // write past the end-of-text token
  bool chat = false;          // a conversation in the terminal
  std::string chat_messages;  // a conversation's file: one reply
  std::string chat_format;    // instead of the folder's template
  bool no_thinking = false;   // Qwen3's enable_thinking false
  int64_t threads = 0;        // 0 = all cores
  std::string dtype = "auto";  // a Llama / Qwen folder's weights: the checkpoint's dtype, or float32
  std::string quantize = "none";  // int8: nn/quantize.h
};

std::vector<Flag> generate_flags(GenerateOptions& o) {
  return {
      text_flag("ckpt", &o.ckpt,
                "a train_gpt --out folder, a Hugging Face GPT-2 folder (config.json, model.safetensors, "
                "vocab.json and merges.txt), or a Hugging Face Llama, Qwen2 or Qwen3 folder (its tokenizer.json encodes --prompt; a folder "
                "without one takes --prompt-ids)"),
      text_flag("prompt", &o.prompt, "the text to continue"),
      text_flag("prompt-ids", &o.prompt_ids, "the prompt as token ids, comma-separated (instead of --prompt)"),
      text_flag("instruction", &o.instruction,
                "instead of --prompt: an instruction, written with the Alpaca template that train_gpt --data-format "
                "jsonl trains on; the answer stops at <|endoftext|> when the tokenizer has it (GPT-2's)"),
      text_flag("input", &o.input, "with --instruction: the template's input part (left out when empty)"),
      text_flag("classify", &o.classify,
                "with a classifier (a train_gpt --task classify run, or a Hugging Face *ForSequenceClassification "
                "folder): print this text's class and its probability, then a JSON line of every class's"),
      text_flag("logits-out", &o.logits_out,
                "write the prompt's logits to this .safetensors file (key \"logits\", (T, vocab), float32)"),
      text_flag("ids-out", &o.ids_out,
                "write the ids generated after the prompt to this .json file (an array; one per sample with "
                "--samples)"),
      int_flag("tokens", &o.tokens, "tokens to write (the tokenizer's tokens: characters for a character run)", 0, 1e9),
      number_flag("temperature", &o.sampling.temperature,
                  "0 = greedy; else at least 0.0001 (below it the logits / temperature overflow float32); higher = "
                  "more surprising",
                  0, models::kMaxTemperature),
      int_flag("top-k", &o.sampling.top_k, "sample among the k most likely tokens (0 = all)", 0, 1e9),
      number_flag("top-p", &o.sampling.top_p, "sample among the most likely tokens whose probabilities sum to p",
                  1e-9, 1),
      seed_flag(&o.seed, "seed of the sampling generator"),
      threads_flag(&o.threads),
      text_flag("dtype", &o.dtype,
                "a Llama / Qwen folder's weights: auto keeps a BF16 or F16 file's matrices 16-bit (half the memory, "
                "the same logits), float32 widens them", {"auto", "float32"}),
      text_flag("quantize", &o.quantize,
                "int8: every matrix int8 with one scale per 32 weights of a row, made at load time (about a quarter "
                "of float32's memory, faster writing, a slightly different text)", {"none", "int8"}),
      int_flag("samples", &o.samples, "how many texts to write", 1, 1000),
      switch_flag("chat", &o.chat, "talk with the model: a line a user turn, /reset, /quit"),
      text_flag("chat-messages", &o.chat_messages,
                "reply once to this conversation (a JSON list of {\"role\", \"content\"} ending with a user turn)"),
      text_flag("chat-format", &o.chat_format, "qwen3, qwen2.5, llama3, llama3.1 or tapegrad, instead of the folder's template"),
      switch_flag("no-thinking", &o.no_thinking, "Qwen3: reply without reasoning (enable_thinking false)"),
      switch_flag("ignore-eos", &o.ignore_eos,
                  "go on past the end-of-text token (GPT-2's <|endoftext|>, printed as such) up to --tokens; "
                  "without it, each text stops there"),
  };
}

// "464,1468,21831" -> {464, 1468, 21831}; each id in [0, vocab_size).
std::vector<int64_t> parse_prompt_ids(const std::string& text, int64_t vocab_size) {
  std::vector<int64_t> ids;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t end = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, end - begin);
    const std::optional<int64_t> id = read_integer(item);
    const std::string which = "--prompt-ids: item " + std::to_string(ids.size() + 1) + " (\"" + item + "\")";
    if (!id) throw UsageError(which + " is not a token id");
    if (*id < 0 || *id >= vocab_size)
      throw UsageError(which + " is out of the vocabulary's range [0, " + std::to_string(vocab_size) + ")");
    ids.push_back(*id);
    begin = end + 1;
  }
  return ids;
}

// The prompt's logits (T, V) in eval mode, one forward, saved as "logits".
void write_prompt_logits(tg::models::CausalLM& model, const std::vector<int64_t>& prompt, const std::string& path) {
  const int64_t T = static_cast<int64_t>(prompt.size());
  if (T > model.context_length())
    throw UsageError("--logits-out: the prompt has " + std::to_string(T) + " tokens, more than the model's context (" +
                     std::to_string(model.context_length()) + ")");
  tg::NoGradGuard no_grad;
  const tg::Tensor logits = model.forward(tg::from_vector(prompt, {1, T})).reshape({T, -1});  // (T,V)
  if (const auto bad = tg::first_nonfinite(logits))  // a weight or config that overflows: no file of NaNs
    throw tg::Error("--logits-out " + path + ": nothing written: the logits hold " + *bad +
                    " (index [position, id]): the model's weights or config overflow");
  tg::save_safetensors(path, {{"logits", logits}}, {{"format", "pt"}});
  std::cerr << "generate: wrote the prompt's logits (" << T << ", " << logits.size(1) << ") to " << path << "\n";
}

// The ids of each sample after the prompt, as JSON: [1, 2] for one sample, [[1, 2], [3]] for more.
void write_generated_ids(const std::vector<std::vector<int64_t>>& samples, const std::string& path) {
  auto array_of = [](const std::vector<int64_t>& ids) {
    json::Writer a = json::Writer::array();
    for (int64_t id : ids) a.item(id);
    return a;
  };
  json::Writer all = json::Writer::array();
  for (const auto& ids : samples) all.item(array_of(ids));
  AtomicFile file(path, "generate --ids-out");
  file.write((samples.size() == 1 ? array_of(samples[0]) : all).str() + "\n");
  file.commit();
}

// Says once that the ids the tokenizer cannot write are never sampled: Qwen2.5's and Qwen3's
// embeddings are padded to 151,936 ids for 151,669 tokens (write_text and ChatSession leave them out).
void note_ids_never_sampled(const models::SavedModel& loaded) {
  if (!loaded.tokenizer) return;
  const int64_t model_ids = loaded.model->vocab_size();
  const size_t left_out = tg::models::ids_the_tokenizer_cannot_write(*loaded.tokenizer, model_ids).size();
  if (left_out == 0) return;
  std::cerr << "generate: note: the model has " << model_ids << " ids, its tokenizer " << loaded.tokenizer->vocab_size()
            << ": the " << left_out << " ids the tokenizer cannot write are never sampled\n";
}

// After a reply: its line ends, and a note says when it stopped at the end of the context.
void end_reply(const tg::models::ChatSession& session) {
  std::cout << "\n";
  if (session.reply_reached_context())
    std::cerr << "generate: note: the reply stopped at the end of the model's context; /reset starts over\n";
}

// One turn of --chat: the reply printed as it comes; a turn the tokenizer cannot write, or one that
// does not fit the context, is dropped with a note, and the session goes on.
void chat_turn(tg::models::ChatSession& session, const std::string& line, tg::Generator& gen,
               const std::function<void(const std::string&)>& print) {
  try {
    session.reply(line, gen, print);
  } catch (const tg::models::ChatTurnDropped& e) {
    std::cerr << "generate: " << e.what() << "\n";
    return;
  }
  end_reply(session);
}

// --chat and --chat-messages: a ChatSession over the model and its tokenizer.
int run_chat(const GenerateOptions& o, models::SavedModel& loaded) {
  if (!loaded.tokenizer) throw UsageError("--chat: " + o.ckpt + " has no tokenizer.json to write the conversation with");
  tokenizers::ChatSetup setup = tokenizers::chat_setup(*loaded.tokenizer, o.chat_format, "--chat: " + o.ckpt);
  setup.options.enable_thinking = !o.no_thinking;
  const tokenizers::ChatFormat format = setup.format;
  const tokenizers::ChatOptions& options = setup.options;
  tg::models::ChatSession session(*loaded.model, *loaded.tokenizer, format, options, o.sampling, o.tokens);
  if (session.end_token() < 0 && !o.ignore_eos)
    std::cerr << "generate: note: the tokenizer has no end-of-turn token for " << tokenizers::chat_format_name(format)
              << "; each reply runs to --tokens\n";
  tg::Generator gen(static_cast<uint64_t>(o.seed));
  const std::function<void(const std::string&)> print = [](const std::string& text) { std::cout << text << std::flush; };
  if (!o.chat_messages.empty()) {
    const json::Value doc = json::parse(read_input_file(o.chat_messages, o.chat_messages), o.chat_messages);
    const json::Value& list = doc.is_object() && doc.contains("messages") ? doc["messages"] : doc;
    const auto messages = tokenizers::chat_messages_from_json(list, o.chat_messages);
    if (messages.back().role != "user") throw tg::Error(o.chat_messages + ": the last message must be the user's, to reply to");
    for (const auto& m : messages) session.add(m);
    try {
      session.reply_to_conversation(gen, print);
    } catch (const tg::models::ChatTurnTooLong& e) {  // a file, not a session: nothing to drop or /reset
      throw tg::Error(o.chat_messages + ": the conversation is " + std::to_string(e.prompt_tokens) +
                      " tokens with the generation prompt, and the model's context (" + std::to_string(e.context) +
                      ") leaves no room for a reply: shorten it");
    } catch (const tg::models::ChatTurnDropped& e) {
      throw tg::Error(o.chat_messages + ": " + e.reason);
    }
    end_reply(session);
    return 0;
  }
  std::cerr << "generate: chatting with " << o.ckpt << " (" << tokenizers::chat_format_name(format)
            << " template); /reset starts over, /quit leaves\n";
  for (std::string line;;) {
    std::cerr << "> " << std::flush;
    if (!std::getline(std::cin, line) || line == "/quit") break;
    if (line == "/reset") {
      session.reset();
      std::cerr << "(a new conversation)\n";
      continue;
    }
    if (!line.empty()) chat_turn(session, line, gen, print);
  }
  return 0;
}

// --classify TEXT: the classifier's class for the text, and the probability of each class.
int run_classify(const GenerateOptions& o, const std::vector<std::string>& given) {
  for (const char* flag : {"prompt", "prompt-ids", "instruction", "input", "chat", "chat-messages", "logits-out", "ids-out",
                           "samples", "tokens", "temperature", "top-k"})
    if (std::find(given.begin(), given.end(), flag) != given.end())
      throw UsageError(std::string("--") + flag + " does not go with --classify (a classifier writes no text)");
  if (o.threads > 0) tg::set_num_threads(static_cast<int>(o.threads));
  models::SavedClassifier loaded = models::load_saved_classifier(o.ckpt, models::weights_dtype_from_flag(o.dtype));
  if (o.quantize == "int8") tg::nn::quantize_int8_(*loaded.model);
  if (!loaded.tokenizer) throw UsageError("--classify: " + o.ckpt + " has no tokenizer.json to read the text with");
  std::vector<double> p;
  try {
    p = models::class_probabilities(*loaded.model, *loaded.tokenizer, o.classify, loaded.context);
  } catch (const tg::Error& e) {
    throw tg::Error(std::string("--classify: ") + e.what());
  }
  const auto& classes = loaded.config.id2label;
  const size_t best = static_cast<size_t>(std::max_element(p.begin(), p.end()) - p.begin());
  std::printf("%s (probability %.4f)\n", classes[best].c_str(), p[best]);
  json::Writer all;
  for (size_t k = 0; k < classes.size(); ++k) all.field(classes[k], p[k]);
  std::cout << json::Writer().field("label", classes[best]).field("probability", p[best]).field("probabilities", all).str()
            << "\n";
  return 0;
}

int run(const GenerateOptions& o, const std::vector<std::string>& given) {
  require_names(given, {{"ckpt", o.ckpt}, {"logits-out", o.logits_out}, {"ids-out", o.ids_out}});
  auto was_given = [&](const char* flag) { return std::find(given.begin(), given.end(), flag) != given.end(); };
  const bool ids_given = was_given("prompt-ids"), instruction_given = was_given("instruction");
  if (ids_given && was_given("prompt")) throw UsageError("give --prompt or --prompt-ids, not both");
  if (instruction_given && (ids_given || was_given("prompt")))
    throw UsageError("--instruction makes the prompt: leave --prompt and --prompt-ids out");
  if (was_given("input") && !instruction_given) throw UsageError("--input goes with --instruction");
  if (was_given("classify")) return run_classify(o, given);
  const double temperature = o.sampling.temperature;
  if (temperature > 0 && temperature < tg::models::kMinTemperature) {
    std::ostringstream least;  // "0.0001"
    least << tg::models::kMinTemperature;
    throw UsageError("--temperature " + tg::nn::python_float(temperature) + ": give 0 (greedy) or at least " +
                     least.str() + " (smaller ones overflow the logits)");
  }
  const bool chat = o.chat || was_given("chat-messages");
  if (chat && (ids_given || instruction_given || was_given("prompt") || !o.logits_out.empty() || !o.ids_out.empty()))
    throw UsageError("--chat and --chat-messages make the prompt from the conversation: leave out --prompt, "
                     "--prompt-ids, --instruction, --logits-out and --ids-out");
  if (o.chat && was_given("chat-messages")) throw UsageError("give --chat or --chat-messages, not both");
  if (o.threads > 0) tg::set_num_threads(static_cast<int>(o.threads));
  models::SavedModel loaded = models::load_saved_model(o.ckpt, models::weights_dtype_from_flag(o.dtype));  // any folder kind (models/saved_model.h)
  if (o.quantize == "int8") tg::nn::quantize_int8_(*loaded.model);  // nn/quantize.h
  note_ids_never_sampled(loaded);
  if (loaded.classifier)
    std::cerr << "generate: note: " << o.ckpt << " is a classifier: the text below is its body's, which was trained "
              << "for classes, not text; --classify TEXT gives a text's class\n";
  if (chat) return run_chat(o, loaded);
  const char* const prompt_flag = instruction_given ? "--instruction" : "--prompt";
  if (!ids_given && !loaded.tokenizer)
    throw UsageError(std::string(prompt_flag) + ": " + o.ckpt + " has no tokenizer.json; give the prompt as --prompt-ids");
  std::vector<int64_t> prompt;
  try {
    if (ids_given) {
      prompt = parse_prompt_ids(o.prompt_ids, loaded.model->vocab_size());
    } else {
      // as the model was trained: the BOS token first where the tokenizer adds one (<|begin_of_text|>)
      prompt = loaded.tokenizer->encode_with_bos(instruction_given ? tokenizers::alpaca_prompt(o.instruction, o.input)
                                                                   : o.prompt);
    }
  } catch (const UsageError&) {
    throw;
  } catch (const tg::Error& e) {
    throw tg::Error(std::string(prompt_flag) + ": " + e.what());  // names the character and its byte
  }
  if (prompt.empty()) throw UsageError("--prompt: empty (give at least one character)");
  tg::models::SamplingOptions sampling = o.sampling;
  if (!o.ignore_eos) sampling.stop_token = loaded.stop_token;
  if (!o.logits_out.empty()) write_prompt_logits(*loaded.model, prompt, o.logits_out);
  tg::Generator gen(static_cast<uint64_t>(o.seed));
  const Activity writing(loaded.tokenizer ? "generating text" : "generating ids");
  std::vector<std::vector<int64_t>> samples;
  for (int64_t k = 0; k < o.samples; ++k) {
    if (o.samples > 1) std::cout << "--- sample " << k + 1 << " ---\n";
    std::vector<int64_t> ids;  // the prompt's and the new ones, cut at the end-of-text
    if (loaded.tokenizer) {
      models::write_text(*loaded.model, *loaded.tokenizer, prompt, o.tokens, sampling, gen, &std::cout, &ids);  // printed as it comes
      ids.erase(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(prompt.size()));
    } else {  // no tokenizer: the ids, comma-separated
      const tg::Tensor idx = tg::from_vector(prompt, {1, static_cast<int64_t>(prompt.size())});
      ids = tg::models::generate(*loaded.model, idx, o.tokens, sampling, &gen).tolist<int64_t>();
      ids.erase(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(prompt.size()));
      if (sampling.stop_token >= 0) ids.erase(std::find(ids.begin(), ids.end(), sampling.stop_token), ids.end());
      for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? "," : "") << ids[i];
    }
    std::cout << "\n";
    samples.push_back(std::move(ids));
  }
  if (!o.ids_out.empty()) write_generated_ids(samples, o.ids_out);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  GenerateOptions o;
  std::vector<std::string> given;
  return run_program({"generate", "Writes text with a saved GPT.", generate_flags(o)}, argc, argv,
                     [&] { return run(o, given); }, &given);
}
