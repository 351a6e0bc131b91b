// bench/bench_gpt2_tokenizer.mjs — js-tiktoken's GPT-2 encoding speed on a text: the twin of
// `bench_bpe --gpt2 DIR` (bench/bench_bpe.cpp), one JSON line of the same shape. Each figure is
// the median of --repeats runs; MB/s are 10^6 bytes of the file (UTF-8), one thread.
//
//   npm install --prefix /tmp/js-tiktoken js-tiktoken@1.0.21
//   node bench/bench_gpt2_tokenizer.mjs /tmp/js-tiktoken input.txt 5
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [dir, file, repeatsText = "5"] = process.argv.slice(2);
if (!dir || !file) {
  console.error("usage: node bench_gpt2_tokenizer.mjs JS_TIKTOKEN_DIR TEXT_FILE [REPEATS]");
  process.exit(2);
}
const { getEncoding } = await import(pathToFileURL(join(dir, "node_modules/js-tiktoken/dist/index.js")).href);
const encoding = getEncoding("gpt2");
const bytes = readFileSync(file);
const text = bytes.toString("utf8");
const repeats = Number(repeatsText);

function medianSeconds(f) {
  const times = [];
  for (let i = 0; i < repeats; ++i) {
    const start = process.hrtime.bigint();
    f();
    times.push(Number(process.hrtime.bigint() - start) / 1e9);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

let ids = [];
const encodeS = medianSeconds(() => { ids = encoding.encode(text, [], []); });
let back = "";
const decodeS = medianSeconds(() => { back = encoding.decode(ids); });
if (back !== text) throw new Error("bench_gpt2_tokenizer: the round trip changed the text");
const mb = bytes.length / 1e6;
console.log(JSON.stringify({ bench: "js-tiktoken 1.0.21 gpt2", bytes: bytes.length, tokens: ids.length,
  encode_mb_per_s: +(mb / encodeS).toFixed(1), decode_mb_per_s: +(mb / decodeS).toFixed(1),
  bytes_per_token: +(bytes.length / ids.length).toFixed(3) }));
