// Chat templates (tokenizers/chat_template.h) against the real templates run by a Jinja engine:
// tests/reference/chat_reference.json (@huggingface/jinja, tests/reference/make_chat_reference.mjs)
// holds 70 renders of 7 conversations by Qwen3's, Qwen2.5's, Llama 3's and Llama 3.2 Instruct's
// chat_template, with and without the generation prompt (and Qwen3's enable_thinking false);
// tapegrad's renderers must write the same text, and tell each template apart from its text.
#include "tokenizers/chat_template.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "io/json.h"
#include "fetched_files.h"
#include "test_util.h"
#include "train/instructions.h"

namespace tg {
namespace {

TEST(ChatTemplate, EveryRenderIsTheJinjaTemplates) {
  const json::Value ref = json::parse_file(std::string(TG_REFERENCE_DIR) + "/chat_reference.json");
  const json::Value& renders = ref["renders"];
  ASSERT_EQ(renders.size(), 70u);
  for (size_t i = 0; i < renders.size(); ++i) {
    const json::Value& r = renders[i];
    SCOPED_TRACE("render " + std::to_string(i) + " (" + r["format"].as_string() + ")");
    const tokenizers::ChatFormat format = tokenizers::chat_format_from_name(r["format"].as_string());
    tokenizers::ChatOptions options;
    options.add_generation_prompt = r["add_generation_prompt"].as_bool();
    options.enable_thinking = r["enable_thinking"].as_bool();
    options.bos_token = r["bos_token"].as_string();
    options.date_string = r["date_string"].as_string();
    const auto messages = tokenizers::chat_messages_from_json(r["messages"], "reference");
    EXPECT_EQ(tokenizers::render_chat(format, messages, options), r["text"].as_string());
  }
}

TEST(ChatTemplate, TheFormatIsToldFromTheTemplateText) {
  const std::string cache = TG_TOKENIZER_CACHE_DIR;
  const std::pair<const char*, const char*> files[] = {{"qwen3-tokenizer", "qwen3"},
                                                       {"qwen2.5-chat", "qwen2.5"},
                                                       {"llama3-tokenizer", "llama3"},
                                                       {"llama3.2-chat", "llama3.1"}};
  for (const auto& [folder, name] : files) {
    const std::string path = cache + "/" + folder + "/tokenizer_config.json";
    if (!test::fetched_file_ready(path)) return;
    const json::Value config = json::parse_file(path);
    EXPECT_STREQ(tokenizers::chat_format_name(
                     tokenizers::chat_format_of_template(config["chat_template"].as_string(), path)),
                 name);
  }
  test::expect_error([] { tokenizers::chat_format_of_template("{{ messages }}", "t.json"); },
                     {"t.json: its chat_template is none that tapegrad renders (qwen3, qwen2.5, llama3, llama3.1 or "
                      "tapegrad); give --chat-format"});
  test::expect_error([] { tokenizers::chat_format_from_name("chatml"); }, {"chat format \"chatml\": tapegrad renders"});
}

TEST(ChatTemplate, TapegradsOwnIsTheInstructionPromptAndTheAnswer) {
  const std::vector<tokenizers::ChatMessage> messages = {
      {"user", "Give the plural of mouse.", std::nullopt}, {"assistant", "mice", std::nullopt}, {"user", "Of goose?", std::nullopt}};
  tokenizers::ChatOptions options;
  options.eos_token = "<|endoftext|>";
  EXPECT_EQ(tokenizers::render_chat(tokenizers::ChatFormat::kTapegrad, messages, options),
            tokenizers::alpaca_prompt("Give the plural of mouse.", "") + "mice<|endoftext|>" + tokenizers::alpaca_prompt("Of goose?", ""));
}

TEST(ChatTemplate, BadMessagesAreErrorsNamingTheMessage) {
  auto error_of = [](const std::string& text, const std::string& part) {
    test::expect_error([&] { tokenizers::chat_messages_from_json(json::parse(text, "m"), "chat.json"); }, {part});
  };
  error_of(R"([{"role": "robot", "content": "x"}])", "chat.json: message 1: unknown role \"robot\" (system, user or assistant)");
  error_of(R"([{"role": "user"}])", "chat.json: message 1: \"content\" is missing or not a string");
  error_of(R"([{"role": "user", "content": "a"}, 3])", "chat.json: message 2 is not an object");
  error_of(R"([])", "chat.json: \"messages\" is empty");
  error_of(R"({"role": "user"})", "chat.json: \"messages\" must be a list");
}

}  // namespace
}  // namespace tg
