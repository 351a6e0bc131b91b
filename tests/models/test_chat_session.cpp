// ChatSession (models/generation/chat_session.h) with Qwen3's real tokenizer and chat template and a tiny
// random Qwen3 of its vocabulary: a reply is what greedy generation writes after the rendered
// conversation, up to <|im_end|>; the KV cache kept across turns gives the replies a fresh session
// gives; /reset forgets. The tokenizer files come from .ci/install-deps.sh (skipped without them).
#include "models/generation/chat_session.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "autograd/ops.h"
#include "autograd/tape.h"
#include "models/gpt.h"
#include "models/llama.h"
#include "train/instructions.h"
#include "fetched_files.h"
#include "padded_vocabulary.h"
#include "test_util.h"

namespace tg {
namespace {

using test::bias_toward_padding;

struct QwenChat {
  tokenizers::Tokenizer tokenizer;
  std::unique_ptr<models::LlamaForCausalLM> model;
};

// nullptr (the test skipped, or failed under TG_REQUIRE_TOKENIZER_FILES=1) when the tokenizer files are missing.
// padding > 0: the model's vocabulary is the tokenizer's and that many ids more (as Qwen's real
// checkpoints), and those ids are made the likeliest whatever the input.
std::unique_ptr<QwenChat> tiny_qwen_chat(int64_t context = 512, int64_t padding = 0) {
  const std::string dir = std::string(TG_TOKENIZER_CACHE_DIR) + "/qwen3-tokenizer";
  if (!test::fetched_file_ready(dir + "/tokenizer.json")) return nullptr;
  auto chat = std::make_unique<QwenChat>();
  chat->tokenizer = tokenizers::load_tokenizer(dir);
  models::LlamaConfig c = test::tiny_qwen3_config(chat->tokenizer.vocab_size() + padding, context, 2);
  c.tie_word_embeddings = padding == 0;
  c.initializer_range = 1.0;  // large weights: replies that vary with the prompt
  manual_seed(11);
  chat->model = std::make_unique<models::LlamaForCausalLM>(c);
  chat->model->eval();
  if (padding > 0) bias_toward_padding(*chat->model, chat->tokenizer.vocab_size());
  return chat;
}

models::ChatSession session_of(QwenChat& chat, int64_t tokens = 12) {
  tokenizers::ChatOptions options;
  options.enable_thinking = false;
  return models::ChatSession(*chat.model, chat.tokenizer, tokenizers::ChatFormat::kQwen3, options,
                             {.temperature = 0.0}, tokens);
}

TEST(ChatSession, AReplyIsGreedyGenerationAfterTheRenderedConversationUpToTheEndToken) {
  auto chat = tiny_qwen_chat();
  if (!chat) return;  // skipped (or failed) by fetched_file_ready
  models::ChatSession session = session_of(*chat);
  Generator gen(1);
  std::string streamed;
  const std::string reply = session.reply("Hello there!", gen, [&](const std::string& t) { streamed += t; });
  EXPECT_EQ(streamed, reply);
  EXPECT_FALSE(reply.empty());  // the tiny model writes something before <|im_end|> (or --tokens)
  // the same ids by hand: render, encode, generate greedily, cut at <|im_end|>
  tokenizers::ChatOptions options;
  options.enable_thinking = false;
  options.add_generation_prompt = true;
  const std::vector<int64_t> prompt = chat->tokenizer.encode(
      tokenizers::render_chat(tokenizers::ChatFormat::kQwen3, {{"user", "Hello there!", std::nullopt}}, options));
  std::vector<int64_t> ids = models::generate(*chat->model, from_vector(prompt, {1, static_cast<int64_t>(prompt.size())}), 12,
                                              {.temperature = 0.0, .stop_token = session.end_token()})
                                 .tolist<int64_t>();
  ids.erase(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(prompt.size()));
  ids.erase(std::find(ids.begin(), ids.end(), session.end_token()), ids.end());
  EXPECT_EQ(reply, chat->tokenizer.decode(ids));
  ASSERT_EQ(session.messages().size(), 2u);
  EXPECT_EQ(session.messages()[1].role, "assistant");
}

TEST(ChatSession, TheCacheKeptAcrossTurnsGivesAFreshSessionsReplies) {
  auto chat = tiny_qwen_chat();
  if (!chat) return;  // skipped (or failed) by fetched_file_ready
  models::ChatSession kept = session_of(*chat);
  Generator gen(1);
  kept.reply("First question?", gen);
  const int64_t after_first = kept.cached_positions();
  const std::string second = kept.reply("And a second one?", gen);
  EXPECT_GT(kept.cached_positions(), after_first);  // the second turn ran on top of the first
  EXPECT_FALSE(second.empty());
  models::ChatSession fresh = session_of(*chat);
  for (const auto& m : kept.messages()) {
    if (&m == &kept.messages().back()) break;
    fresh.add(m);
  }
  EXPECT_EQ(fresh.reply_to_conversation(gen), second);
  kept.reset();
  EXPECT_TRUE(kept.messages().empty());
  EXPECT_EQ(kept.cached_positions(), 0);
}

// Qwen's vocabulary is padded past its tokenizer's ids: the reply never has one of those ids (decode
// would stop the session with "id 151800 is no token of this tokenizer"), however likely.
TEST(ChatSession, OnlyIdsTheTokenizerCanWriteAreSampled) {
  auto chat = tiny_qwen_chat(512, 267);
  if (!chat) return;  // skipped (or failed) by fetched_file_ready
  EXPECT_EQ(models::ids_the_tokenizer_cannot_write(chat->tokenizer, chat->model->vocab_size()).size(), 267u);
  {  // the model does prefer the padding: greedy on its own picks a padded id
    NoGradGuard no_grad;
    const Tensor logits = chat->model->forward(from_vector(std::vector<int64_t>{1, 2, 3}, {1, 3})).select(1, 2);
    EXPECT_GE(models::sample_next_token(logits, {.temperature = 0.0}).item<int64_t>(), chat->tokenizer.vocab_size());
  }
  for (const double temperature : {0.0, 1.0}) {
    tokenizers::ChatOptions options;
    options.enable_thinking = false;
    models::ChatSession session(*chat->model, chat->tokenizer, tokenizers::ChatFormat::kQwen3, options,
                                {.temperature = temperature}, 8);
    Generator gen(1);
    EXPECT_NO_THROW(session.reply("Hello there!", gen)) << temperature;
  }
}

// A turn that leaves no room for a reply in the context is dropped, the conversation kept as it
// was, and the session goes on; a reply that reaches the end of the context stops there.
TEST(ChatSession, ATurnPastTheContextIsDroppedAndTheSessionGoesOn) {
  auto chat = tiny_qwen_chat(40);
  if (!chat) return;  // skipped (or failed) by fetched_file_ready
  tokenizers::ChatOptions options;
  options.enable_thinking = false;
  // the end token suppressed: each reply runs to max_new_tokens or the end of the context
  const int64_t end = tokenizers::chat_end_token(tokenizers::ChatFormat::kQwen3, chat->tokenizer);
  models::ChatSession session(*chat->model, chat->tokenizer, tokenizers::ChatFormat::kQwen3, options,
                              {.temperature = 0.0, .suppress_tokens = {end}}, 4);
  Generator gen(1);
  std::string long_turn;
  for (int k = 0; k < 40; ++k) long_turn += " word";
  test::expect_error([&] { session.reply(long_turn, gen); },
                     {"chat: the turn is dropped: the conversation with it is ", " tokens, and the model's context (40) "
                      "leaves no room for a reply; even alone it is ", "write a shorter one"});
  EXPECT_TRUE(session.messages().empty());
  session.reply("Hi", gen);  // the session goes on: a prompt of about a dozen tokens, a reply of 4
  ASSERT_EQ(session.messages().size(), 2u);
  EXPECT_FALSE(session.reply_reached_context());
  // the conversation so far and this turn do not fit, though the turn alone would: /reset helps
  try {
    for (int k = 0; k < 3; ++k) session.reply("And more?", gen);
    ADD_FAILURE() << "the conversation never filled the context";
  } catch (const models::ChatTurnTooLong& e) {
    EXPECT_TRUE(test::has_part(e.what(), "; /reset starts over (alone it is ")) << e.what();
  }
  EXPECT_EQ(session.messages().back().role, "assistant");  // the dropped turn is not there
  // a reply that runs into the end of the context stops there, its text kept
  models::ChatSession filling(*chat->model, chat->tokenizer, tokenizers::ChatFormat::kQwen3, options,
                              {.temperature = 0.0, .suppress_tokens = {end}}, 1000);
  const std::string reply = filling.reply("Hi", gen);
  EXPECT_TRUE(filling.reply_reached_context());
  EXPECT_FALSE(reply.empty());
  EXPECT_EQ(filling.cached_positions(), 40);
}

}  // namespace
}  // namespace tg

namespace tg {
namespace {

// A turn the tokenizer cannot write (a character a character-level vocabulary lacks, bytes that
// are not UTF-8) is dropped as a turn too long is: the conversation as it was, the session goes on.
TEST(ChatSession, ATurnTheTokenizerCannotWriteIsDroppedAndTheSessionGoesOn) {
  manual_seed(7);
  const tokenizers::Tokenizer tokenizer =
      tokenizers::Tokenizer(tokenizers::CharTokenizer::from_text(tokenizers::alpaca_prompt("hi there", "") + "ok"))
          .with_end_of_text();
  models::GPTConfig config;
  config.vocab_size = tokenizer.vocab_size();
  config.context_length = 256;  // the template's prompt is about 150 characters
  config.emb_dim = 8;
  config.n_heads = 2;
  config.n_layers = 1;
  models::GPTModel model(config);
  model.eval();
  tokenizers::ChatOptions options;
  options.eos_token = std::string(tokenizers::Tokenizer::kEndOfText);
  models::ChatSession session(model, tokenizer, tokenizers::ChatFormat::kTapegrad, options, {.temperature = 0.0}, 2);
  Generator gen(1);
  for (const std::string& turn : {std::string("ZZZ"), std::string("hi \xff there")}) {
    SCOPED_TRACE(turn);
    test::expect_error([&] { session.reply(turn, gen); }, {"chat: the turn is dropped: "});
    EXPECT_TRUE(session.messages().empty());
  }
  try {
    session.reply("hi there", gen);
  } catch (const models::ChatTurnDropped& e) {
    FAIL() << "a turn of the vocabulary's characters was dropped: " << e.what();
  }
  EXPECT_EQ(session.messages().size(), 2u);
}

}  // namespace
}  // namespace tg
