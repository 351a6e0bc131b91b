// ChatSession (models/chat_session.h) with Qwen3's real tokenizer and chat template and a tiny
// random Qwen3 of its vocabulary: a reply is what greedy generation writes after the rendered
// conversation, up to <|im_end|>; the KV cache kept across turns gives the replies a fresh session
// gives; /reset forgets. The tokenizer files come from .ci/install-deps.sh (skipped without them).
#include "models/chat_session.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "autograd/ops.h"
#include "autograd/tape.h"
#include "models/llama.h"
#include "fetched_files.h"
#include "test_util.h"

namespace tg {
namespace {

struct QwenChat {
  tokenizers::Tokenizer tokenizer;
  std::unique_ptr<models::LlamaForCausalLM> model;
};

// nullptr (the test skipped, or failed under TG_REQUIRE_TOKENIZER_FILES=1) when the tokenizer files are missing
std::unique_ptr<QwenChat> tiny_qwen_chat() {
  const std::string dir = std::string(TG_TOKENIZER_CACHE_DIR) + "/qwen3-tokenizer";
  if (!test::fetched_file_ready(dir + "/tokenizer.json")) return nullptr;
  auto chat = std::make_unique<QwenChat>();
  chat->tokenizer = tokenizers::load_tokenizer(dir);
  models::LlamaConfig c;
  c.model_type = "qwen3";
  c.vocab_size = chat->tokenizer.vocab_size();
  c.hidden_size = 8;
  c.intermediate_size = 16;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 2;
  c.num_key_value_heads = 1;
  c.head_dim = 4;
  c.max_position_embeddings = 512;
  c.qk_norm = true;
  c.tie_word_embeddings = true;
  c.initializer_range = 1.0;  // large weights: replies that vary with the prompt
  manual_seed(11);
  chat->model = std::make_unique<models::LlamaForCausalLM>(c);
  chat->model->eval();
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

}  // namespace
}  // namespace tg
