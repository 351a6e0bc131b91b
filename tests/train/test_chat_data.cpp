// Conversations as fine-tuning data (train/chat_data.h, train_gpt --data-format chat): the lines
// read with their errors, each conversation rendered by its tokenizer's template with the
// assistant turns alone as targets (tapegrad's template with characters and with GPT-2's tokens,
// Qwen3's and Llama 3's with their own files), and a run that learns them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/fetched_files.h"
#include "tokenizers/tokenizer.h"
#include "train/chat_data.h"
#include "train/trainer.h"
#include "test_util.h"

namespace tg {
namespace {

using test::expect_error;

const std::string kChats =
    "{\"messages\": [{\"role\": \"user\", \"content\": \"Plural of mouse?\"}, {\"role\": \"assistant\", \"content\": \"mice\"}]}\n"
    "\n"
    "{\"messages\": [{\"role\": \"user\", \"content\": \"Plural of ox?\"}, {\"role\": \"assistant\", \"content\": \"oxen\"},"
    " {\"role\": \"user\", \"content\": \"And goose?\"}, {\"role\": \"assistant\", \"content\": \"geese\"}], \"id\": 7}\n";

// The text of an example's targets, each maximal run of them between [ and ].
std::string targets_of(const train::InstructionExample& e, const tokenizers::Tokenizer& tokenizer) {
  std::string out;
  for (size_t i = 0; i < e.ids.size();) {
    if (!e.is_target[i]) {
      ++i;
      continue;
    }
    std::vector<int64_t> run;
    for (; i < e.ids.size() && e.is_target[i]; ++i) run.push_back(e.ids[i]);
    out += "[" + tokenizer.decode(run) + "]";
  }
  return out;
}

TEST(ChatData, ReadsTheConversationsAndKeepsLineNumbers) {
  const std::vector<train::Conversation> chats = train::parse_chats(kChats, "c.jsonl");
  ASSERT_EQ(chats.size(), 2u);
  EXPECT_EQ(chats[0].line, 1);
  EXPECT_EQ(chats[1].line, 3);
  ASSERT_EQ(chats[1].messages.size(), 4u);
  EXPECT_EQ(chats[1].messages[3].content, "geese");
}

TEST(ChatData, BadLinesAreErrorsNamingTheFileAndTheLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}", "c.jsonl: line 1: no assistant turn"},
      {"{\"turns\": []}", "c.jsonl: line 1: \"messages\" is missing"},
      {"\n{\"messages\": [{\"role\": \"tool\", \"content\": \"x\"}]}", "c.jsonl: line 2: message 1: unknown role \"tool\""},
      {"{\"messages\": [{\"role\": \"user\"}]}", "c.jsonl: line 1: message 1: \"content\" is missing"},
      {"{\"messages\": [", "c.jsonl: line 1: not JSON"},
      {"[1, 2]", "c.jsonl: line 1: not a JSON object (got an array)"},
      {"\n  \n", "c.jsonl: no conversations"},
  };
  for (const auto& [text, message] : cases) expect_error([&] { train::parse_chats(text, "c.jsonl"); }, {message});
  // a conversation given as instruction examples says which format it is
  expect_error([] { train::parse_instructions(kChats, "c.jsonl"); }, {"c.jsonl: line 1: a conversation", "--data-format chat"});
}

// Characters: tapegrad's template (the instruction prompt, then the answer), no end-of-text token.
TEST(ChatData, WithCharactersTheAssistantTurnsAloneAreTargets) {
  const std::vector<train::Conversation> chats = train::parse_chats(kChats, "c.jsonl");
  const tokenizers::Tokenizer chars = tokenizers::CharTokenizer::from_text(train::chats_as_text(chats));
  const train::EncodedInstructions encoded = train::encode_chats(chats, chars, 1000, "c.jsonl");
  ASSERT_EQ(encoded.examples.size(), 2u);
  EXPECT_EQ(targets_of(encoded.examples[0], chars), "[mice]");
  EXPECT_EQ(targets_of(encoded.examples[1], chars), "[oxen][geese]");
  const train::InstructionExample& e = encoded.examples[1];
  EXPECT_EQ(chars.decode(e.ids), tokenizers::alpaca_prompt("Plural of ox?", "") + "oxen" +
                                     tokenizers::alpaca_prompt("And goose?", "") + "geese");
  // a sample is prompted with everything before the last answer
  EXPECT_EQ(chars.decode({e.ids.begin(), e.ids.begin() + e.prompt_tokens}),
            tokenizers::alpaca_prompt("Plural of ox?", "") + "oxen" + tokenizers::alpaca_prompt("And goose?", ""));
  // the batch's targets: the next id where it is a target, -100 elsewhere
  const train::Batch b = train::instruction_batch(encoded.examples, {1}, 0);
  const std::vector<int64_t> y = b.y.tolist<int64_t>();
  for (size_t t = 0; t + 1 < e.ids.size(); ++t) EXPECT_EQ(y[t], e.is_target[t + 1] ? e.ids[t + 1] : -100) << t;
  // too long for the context: skipped, by line
  const train::EncodedInstructions short_context = train::encode_chats(chats, chars, 200, "c.jsonl");
  EXPECT_EQ(short_context.examples.size(), 1u);
  EXPECT_EQ(short_context.skipped_lines, std::vector<int64_t>{3});
  // tapegrad's template has no system turn: the error names the line
  const std::string with_system =
      "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": \"hi\"},"
      " {\"role\": \"assistant\", \"content\": \"hello\"}]}";
  expect_error([&] { train::encode_chats(train::parse_chats(with_system, "s.jsonl"), chars, 1000, "s.jsonl"); },
               {"s.jsonl: line 1: chat template tapegrad: it has no system turn"});
}

// A line of 100,000 turns is skipped once its pieces pass the context: the turns after that are
// neither rendered one prefix at a time nor encoded (each assistant turn rendered the turns before
// it, for the whole line: quadratic); the conversations that fit come out as they did.
TEST(ChatData, ALineOfManyTurnsIsSkippedOnceItCannotFit) {
  std::string many = "{\"messages\": [";
  for (int k = 0; k < 50000; ++k)
    many += std::string(k ? ", " : "") + "{\"role\": \"user\", \"content\": \"ox?\"}, {\"role\": \"assistant\", \"content\": \"oxen\"}";
  many += "]}\n";
  const std::vector<train::Conversation> chats = train::parse_chats(kChats + many, "c.jsonl");
  ASSERT_EQ(chats.back().messages.size(), 100000u);
  const tokenizers::Tokenizer chars = tokenizers::CharTokenizer::from_text(train::chats_as_text(chats));
  const train::EncodedInstructions encoded = train::encode_chats(chats, chars, 1000, "c.jsonl");
  EXPECT_EQ(encoded.skipped_lines, std::vector<int64_t>{4});
  ASSERT_EQ(encoded.examples.size(), 2u);
  const train::EncodedInstructions alone = train::encode_chats({chats[0], chats[1]}, chars, 1000, "c.jsonl");
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(encoded.examples[i].ids, alone.examples[i].ids);
    EXPECT_EQ(encoded.examples[i].is_target, alone.examples[i].is_target);
    EXPECT_EQ(encoded.examples[i].prompt_tokens, alone.examples[i].prompt_tokens);
  }
}

// GPT-2's tokens: tapegrad's template with <|endoftext|> after each answer, learnt with it.
TEST(ChatData, WithGpt2sTokensEachAnswerEndsInTheEndOfText) {
  const tokenizers::Tokenizer gpt2 = tokenizers::load_tokenizer(std::string(TG_REFERENCE_DIR) + "/lora/base");
  const train::EncodedInstructions encoded = train::encode_chats(train::parse_chats(kChats, "c.jsonl"), gpt2, 1000, "c.jsonl");
  EXPECT_EQ(targets_of(encoded.examples[1], gpt2), "[oxen<|endoftext|>][geese<|endoftext|>]");
  EXPECT_EQ(encoded.examples[1].ids.back(), gpt2.end_of_text_id());  // the special token, not its text's tokens
}

// Qwen3's and Llama 3's templates from their own files: the answer through the end-of-turn token;
// Qwen3's last answer with its (empty) think block, as the template writes it.
TEST(ChatData, WithQwen3sAndLlama3sTemplatesTheAnswersEndWithTheirEndOfTurn) {
  const std::string cache = TG_TOKENIZER_CACHE_DIR;
  const std::pair<const char*, const char*> files[] = {
      {"qwen3-tokenizer", "[oxen<|im_end|>][<think>\n\n</think>\n\ngeese<|im_end|>]"},
      {"llama3-tokenizer", "[oxen<|eot_id|>][geese<|eot_id|>]"}};
  for (const auto& [folder, want] : files) {
    if (!test::fetched_file_ready(cache + "/" + folder + "/tokenizer_config.json")) return;
    const tokenizers::Tokenizer tokenizer = tokenizers::load_tokenizer(cache + "/" + folder);
    const std::vector<train::Conversation> chats = train::parse_chats(kChats, "c.jsonl");
    const train::EncodedInstructions encoded = train::encode_chats(chats, tokenizer, 1000, "c.jsonl");
    EXPECT_EQ(targets_of(encoded.examples[1], tokenizer), want) << folder;
    // here the pieces' ids are those of the whole conversation encoded at once
    const tokenizers::ChatSetup setup = train::chat_training_setup(tokenizer, "c.jsonl");
    EXPECT_EQ(encoded.examples[1].ids, tokenizer.encode(tokenizers::render_chat(setup.format, chats[1].messages, setup.options)))
        << folder;
  }
}

// A tiny model learns the answers: the loss over the assistant turns falls.
TEST(ChatData, ARunLearnsTheAssistantTurns) {
  std::string jsonl;
  for (int i = 0; i < 12; ++i) jsonl += kChats;
  train::TrainOptions o;
  o.data_format = "chat";
  o.data = "c.jsonl";
  o.model.context_length = 512;
  o.model.emb_dim = 16;
  o.model.n_heads = 2;
  o.model.n_layers = 1;
  o.batch = 4;
  o.steps = 30;
  o.warmup = 2;
  o.eval_batches = 1;
  train::Trainer t(o, jsonl);
  ASSERT_NE(t.instructions(), nullptr);
  EXPECT_EQ(t.instructions()->train.size() + t.instructions()->val.size(), 24u);
  const double before = t.evaluate().val;
  for (int i = 0; i < 30; ++i) t.train_step();
  EXPECT_LT(t.evaluate().val, before - 0.5);
}

// A run from scratch on conversations (char or bpe): its tokenizer gets the end-of-text token after
// its vocabulary, each answer's targets end with it, it is saved and read back, and generation stops
// there; a run on plain text keeps its vocabulary as it was.
TEST(ChatData, AFromScratchRunsTokenizerEndsEachAnswerInItsEndOfText) {
  std::string jsonl;
  for (int i = 0; i < 3; ++i) jsonl += kChats;
  for (const char* kind : {"char", "bpe"}) {
    SCOPED_TRACE(kind);
    train::TrainOptions o;
    o.data_format = "chat";
    o.data = "c.jsonl";
    o.tokenizer = kind;
    o.vocab_size = 300;
    o.model.context_length = 512;
    o.model.emb_dim = 8;
    o.model.n_heads = 2;
    o.model.n_layers = 1;
    train::Trainer t(o, jsonl);
    const tokenizers::Tokenizer& tok = t.tokenizer();
    const int64_t end = tok.end_of_text_id();
    ASSERT_EQ(end, tok.vocab_size() - 1);
    EXPECT_EQ(tok.decode({end}), "<|endoftext|>");
    EXPECT_EQ(tok.bytes_per_id().back(), 13);
    EXPECT_EQ(tokenizers::chat_end_token(tokenizers::ChatFormat::kTapegrad, tok), end);  // generate --chat stops there
    EXPECT_EQ(tok.encode("ox<|endoftext|>", true), (std::vector<int64_t>{tok.encode("o")[0], tok.encode("x")[0], end}))
        << "with allow_special, the text is the token";
    const std::vector<train::InstructionExample>& train = t.instructions()->train;
    ASSERT_EQ(train.size(), 5u);
    EXPECT_EQ(targets_of(train[1], tok), "[oxen<|endoftext|>][geese<|endoftext|>]");
    EXPECT_EQ(train[1].ids.back(), end);
    // saved and read back: the same tokenizer, the token named in its tokenizer.json
    const std::string saved = tok.to_json();
    EXPECT_NE(saved.find("\"eos_token\": \"<|endoftext|>\""), std::string::npos) << saved;
    const tokenizers::Tokenizer back = tokenizers::Tokenizer::from_json(saved, "tokenizer.json");
    EXPECT_EQ(back.to_json(), saved);
    EXPECT_EQ(back.end_of_text_id(), end);
    EXPECT_EQ(back.decode(train[1].ids), tok.decode(train[1].ids));
    // plain text: no special token, the characters' ids alone
    train::TrainOptions text_options = o;
    text_options.data_format = "text";
    text_options.data = "";
    text_options.model.context_length = 16;
    train::Trainer plain(text_options, jsonl + jsonl + jsonl);
    EXPECT_EQ(plain.tokenizer().end_of_text_id(), -1);
    EXPECT_EQ(plain.tokenizer().to_json().find("eos_token"), std::string::npos);
  }
  expect_error([] { tokenizers::Tokenizer::from_json(R"({"type":"char","kind":"utf8","symbols":[97],"eos_token":7})", "t.json"); },
               {"t.json: \"eos_token\" must be a token's text, such as \"<|endoftext|>\"; got a number"});
}

}  // namespace
}  // namespace tg
