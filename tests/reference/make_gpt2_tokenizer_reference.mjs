// tests/reference/make_gpt2_tokenizer_reference.mjs — makes gpt2_tokenizer_reference.json: the
// GPT-2 ids of texts written here, from js-tiktoken (MIT; OpenAI's tiktoken ported to
// JavaScript, with the gpt2 ranks built in), pinned to 1.0.21. tests/examples/
// test_gpt2_tokenizer.cpp checks that Gpt2Tokenizer gives the same ids and decodes them back.
//
//   npm install --prefix /tmp/js-tiktoken js-tiktoken@1.0.21
//   node tests/reference/make_gpt2_tokenizer_reference.mjs /tmp/js-tiktoken \
//     > tests/reference/gpt2_tokenizer_reference.json
//
// js-tiktoken runs GPT-2's pattern as a JavaScript RegExp, whose \s is not Unicode's
// White_Space (the \s of GPT-2's Python regex module and of tiktoken's Rust): it adds U+FEFF
// and leaves out U+0085. No text here holds either (pre-split unit tests cover them), nor
// letters or digits newer than Unicode 14 (our table's version; Node's may be newer).
// "allow_special": false is tiktoken's encode_ordinary (the text "<|endoftext|>" is plain
// text); true is allowed_special "all" (it becomes id 50256).
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const dir = process.argv[2];
if (!dir) {
  console.error("usage: node make_gpt2_tokenizer_reference.mjs DIR (where js-tiktoken@1.0.21 is installed)");
  process.exit(2);
}
const jsTiktoken = await import(pathToFileURL(join(dir, "node_modules/js-tiktoken/dist/index.js")).href);
const encoding = jsTiktoken.getEncoding("gpt2");

const texts = [
  // English and contractions
  "Hello, world!",
  "The quick brown fox jumps over the lazy dog.",
  "I'm sure you'll see they've said it's what we'd do, and we're done; don't.",
  "HE'S SHOUTING: IT'S MINE, THEY'RE OURS, WE'LL SEE, I'D SAY, YOU'VE WON, I'M OFF.",
  "'s 't 're 've 'm 'll 'd",
  "'S 'T 'RE 'VE 'M 'LL 'D",
  "rock 'n' roll, 'tis the season, the '90s, o'clock, y'all, ma'am, ''quoted'', 'x 'sx 'lll",
  "It’s a curly apostrophe: don’t split it like 't.",
  // accented Latin, other scripts
  "Café crème brûlée à la mode; naïve façade; Ångström; São Paulo; Dvořák; Łódź; Øresund.",
  "Straße, Äpfel, Übermut, öffentlich — „Anführungszeichen“ und »Guillemets«.",
  "机器学习是人工智能的一个分支。我们今天去北京，好吗？",
  "東京タワーは、日本の首都にあります。ひらがなとカタカナ。",
  "한국어 텍스트도 시험해 봅시다.",
  "مرحبا بالعالم! هذه جملة عربية مع أرقام ١٢٣٤ و 5678.",
  "नमस्ते दुनिया, यह हिन्दी का वाक्य है। संख्या १२३",
  "Привет, мир! Съешь же ещё этих мягких французских булок, да выпей чаю.",
  "Γειά σου Κόσμε· αβγδε ΑΒΓΔΕ",
  "שלום עולם",
  // emoji
  "I love pizza 🍕 and 🎉 parties!!! 😀😃😄",
  "Family: 👨‍👩‍👧‍👦 and 🏳️‍🌈 and 👩🏽‍💻 coding; thumbs 👍🏻👍🏼👍🏽👍🏾👍🏿.",
  "Flags 🇫🇷🇩🇪🇯🇵, keycaps 1️⃣#️⃣, hearts ❤️ ❤ ♥️.",
  // digits and numbers
  "0 1 12 123 1234 12345 123456789012345678901234567890",
  "Pi is 3.14159265358979, e is 2.718281828, and 1,000,000 is a million; -42; +7; 1e-9; 0x1F; v2.0.1",
  "Call 555-0199 or +1 (800) 555-0123 on 2024-01-31T12:34:56Z.",
  "Roman Ⅻ, fractions ½ ¾, superscripts x² y³, circled ① ②.",
  // whitespace
  "a b  c   d    e",
  "trailing spaces   ",
  "   leading spaces",
  "tabs\tand\t\ttwo tabs\t",
  "lines\nand\n\ntwo newlines\n\n\n",
  "windows\r\nline\r\nends\r\n",
  "mixed \t \n  \n\t word",
  " ",
  "\n",
  "\t\t\t",
  "no\u00a0break\u00a0spaces and \u00a0 mixed",
  "ideographic\u3000space\u3000\u3000twice",
  "en\u2002space, em\u2003space, thin\u2009space, line\u2028separator, paragraph\u2029separator",
  "control \u0001 \u001f chars \u007f",
  // code
  "def add(a, b):\n    \"\"\"Add two numbers.\"\"\"\n    return a + b\n\nif __name__ == '__main__':\n    print(add(2, 3))\n",
  "#include <vector>\n\nint main() {\n  std::vector<int> v{1, 2, 3};\n  for (int x : v) x *= 2;  // doubled\n  return v.size() > 2 ? 0 : 1;\n}\n",
  "{\"name\": \"tapegrad\", \"version\": 1.5, \"tags\": [\"c++\", \"autograd\"], \"ok\": true, \"none\": null}",
  "    indented = {'key': [1, 2, 3]}  # comment\n\tlambda x: x**2 != x//2 && y->z || !w;",
  "https://example.com/path?query=value&other=1#anchor email@example.org",
  // the special token, both ways (see the flags below)
  "Hello<|endoftext|>World",
  "<|endoftext|>",
  "end of one document. <|endoftext|> Start of the next<|endoftext|><|endoftext|>\n",
  "<|endoftext|  <|endo <|endoftext|>|>",
  // a paragraph
  "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of foolishness, " +
      "it was the epoch of belief, it was the epoch of incredulity, it was the season of Light, it was the season of " +
      "Darkness, it was the spring of hope, it was the winter of despair.",
];

const cases = [];
for (const text of texts) {
  const special = text.includes("<|endoftext|>");
  cases.push({ text, allow_special: false, ids: encoding.encode(text, [], []) });
  if (special) cases.push({ text, allow_special: true, ids: encoding.encode(text, "all") });
}
const lines = cases.map((c) => "  " + JSON.stringify(c));
process.stdout.write(
  '{"made_by": "tests/reference/make_gpt2_tokenizer_reference.mjs", "js_tiktoken": "1.0.21", ' +
    `"node_unicode": "${process.versions.unicode}", "cases": [\n` + lines.join(",\n") + "\n]}\n");
