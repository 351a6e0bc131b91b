// tokenizers/gpt2_tokenizer.cpp — reading GPT-2's two files into BpeTokenizer's merges and a
// map to GPT-2's ids; encoding, decoding and writing the files back (gpt2_tokenizer.h).
#include "tokenizers/gpt2_tokenizer.h"

#include <array>
#include <cstdio>
#include <filesystem>
#include <set>
#include <unordered_map>
#include <utility>

#include "autograd/error.h"
#include "io/atomic_file.h"
#include "io/json.h"
#include "io/flags.h"
#include "io/user_file.h"

namespace tg::tokenizers {

namespace {

// GPT-2's bytes_to_unicode: byte -> the code point that stands for it in the files. The
// printable bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF stand for themselves; the other 68, in
// increasing order, for U+0100, U+0101, ...
std::array<uint32_t, 256> bytes_to_unicode() {
  std::array<uint32_t, 256> table{};
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    table[b] = printable ? b : next++;
  }
  return table;
}

// The token's bytes: each character read back through bytes_to_unicode; false if one is not in it.
bool token_to_bytes(std::string_view token, std::string& bytes) {
  static const std::unordered_map<uint32_t, char> byte_of = [] {
    std::unordered_map<uint32_t, char> inverse;
    const std::array<uint32_t, 256> table = bytes_to_unicode();
    for (int b = 0; b < 256; ++b) inverse[table[static_cast<size_t>(b)]] = static_cast<char>(b);
    return inverse;
  }();
  std::vector<uint32_t> code_points;
  if (!json::decode_utf8(token, code_points)) return false;
  bytes.clear();
  for (uint32_t c : code_points) {
    const auto it = byte_of.find(c);
    if (it == byte_of.end()) return false;
    bytes += it->second;
  }
  return !bytes.empty();
}

}  // namespace

bool byte_level_token_bytes(std::string_view token, std::string& bytes) { return token_to_bytes(token, bytes); }

namespace {

std::string in_quotes(std::string_view token) { return "'" + std::string(token) + "'"; }

// vocab.json: {token: id}, ids 0..N-1 each once. Fills token_bytes (id -> bytes) and id_of.
void read_vocab(const std::string& text, const std::string& name, std::vector<std::string>& token_bytes,
                std::unordered_map<std::string, int32_t>& id_of) {
  const json::Value doc = json::parse(text, name);
  if (!doc.is_object()) throw Error(name + ": expected a JSON object {token: id, ...}");
  const auto& members = doc.as_object();
  token_bytes.assign(members.size(), std::string());
  std::vector<const std::string*> token_of(members.size(), nullptr);
  std::string bytes;
  for (const auto& [token, value] : members) {
    if (!value.is_number()) throw Error(name + ": the id of token " + in_quotes(token) + " is not a number");
    const int64_t id = value.as_int64();
    if (id < 0 || id >= static_cast<int64_t>(members.size())) {
      throw Error(name + ": token " + in_quotes(token) + " has id " + std::to_string(id) + ", outside [0, " +
                  std::to_string(members.size()) + ") (the ids must be 0..N-1, N tokens)");
    }
    if (token_of[static_cast<size_t>(id)]) {
      throw Error(name + ": tokens " + in_quotes(*token_of[static_cast<size_t>(id)]) + " and " + in_quotes(token) +
                  " both have id " + std::to_string(id));
    }
    if (!token_to_bytes(token, bytes)) {
      throw Error(name + ": token " + in_quotes(token) + " (id " + std::to_string(id) +
                  ") has a character that stands for no byte in GPT-2's bytes_to_unicode");
    }
    if (!id_of.emplace(bytes, static_cast<int32_t>(id)).second) {
      throw Error(name + ": tokens " + in_quotes(*token_of[static_cast<size_t>(id_of[bytes])]) + " and " +
                  in_quotes(token) + " stand for the same bytes");
    }
    token_of[static_cast<size_t>(id)] = &token;
    token_bytes[static_cast<size_t>(id)] = bytes;
  }
  const std::array<uint32_t, 256> table = bytes_to_unicode();
  for (int b = 0; b < 256; ++b) {
    if (!id_of.count(std::string(1, static_cast<char>(b)))) {
      std::string shown;
      json::append_utf8(shown, table[static_cast<size_t>(b)]);
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", b);
      throw Error(name + ": no token for byte " + hex + " (" + in_quotes(shown) + "); all 256 bytes must be tokens");
    }
  }
}

}  // namespace

Gpt2Tokenizer Gpt2Tokenizer::from_texts(std::string vocab_json, const std::string& vocab_name,
                                        std::string merges_text, const std::string& merges_name) {
  Gpt2Tokenizer t;
  std::unordered_map<std::string, int32_t> gpt2_id_of;  // bytes -> GPT-2's id
  read_vocab(vocab_json, vocab_name, t.token_bytes_, gpt2_id_of);
  if (const auto it = gpt2_id_of.find(std::string(kEndOfText)); it != gpt2_id_of.end()) t.end_of_text_ = it->second;

  // merges.txt, line by line: tapegrad's id for each token made so far (bytes: 0..255)
  std::unordered_map<std::string, int32_t> made;
  for (int b = 0; b < 256; ++b) made[std::string(1, static_cast<char>(b))] = b;
  std::vector<BpeTokenizer::Merge> merges;
  std::set<std::pair<int32_t, int32_t>> seen;
  std::string left, right;
  bool blank_seen = false;
  const std::vector<std::string_view> lines = text_lines(merges_text);  // "\n", "\r\n" or "\r" line ends
  for (int64_t line_number = 1; line_number <= std::ssize(lines); ++line_number) {
    const std::string_view line = lines[static_cast<size_t>(line_number - 1)];
    const std::string where = merges_name + ": line " + std::to_string(line_number) + ": ";
    if (line_number == 1 && line.rfind("#version", 0) == 0) continue;
    if (line.empty()) {
      blank_seen = true;
      continue;
    }
    if (blank_seen) throw Error(where + "a merge after a blank line");
    const size_t space = line.find(' ');
    if (space == 0 || space == std::string_view::npos || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string_view::npos) {
      throw Error(where + "expected two tokens separated by one space, got " + in_quotes(line));
    }
    const std::string_view parts[2] = {line.substr(0, space), line.substr(space + 1)};
    int32_t ids[2] = {0, 0};
    for (int k = 0; k < 2; ++k) {
      std::string& bytes = k == 0 ? left : right;
      if (!token_to_bytes(parts[k], bytes)) {
        throw Error(where + in_quotes(parts[k]) + " has a character that stands for no byte in bytes_to_unicode");
      }
      if (!gpt2_id_of.count(bytes)) throw Error(where + in_quotes(parts[k]) + " is not a token of " + vocab_name);
      const auto it = made.find(bytes);
      if (it == made.end()) throw Error(where + in_quotes(parts[k]) + " is neither a byte nor made by an earlier merge");
      ids[k] = it->second;
    }
    if (!seen.emplace(ids[0], ids[1]).second) throw Error(where + "repeats an earlier merge, " + in_quotes(line));
    const std::string merged = left + right;
    if (!gpt2_id_of.count(merged)) {
      throw Error(where + "the merge " + in_quotes(line) + " makes a token that is not in " + vocab_name);
    }
    made.emplace(merged, 256 + static_cast<int32_t>(merges.size()));  // the first merge that makes it
    merges.push_back({ids[0], ids[1]});
  }
  t.bpe_ = BpeTokenizer::from_merges(std::move(merges), merges_name);
  t.gpt2_id_.resize(static_cast<size_t>(t.bpe_.vocab_size()));
  for (int64_t id = 0; id < t.bpe_.vocab_size(); ++id) {
    t.gpt2_id_[static_cast<size_t>(id)] = gpt2_id_of.at(t.bpe_.token_bytes(id));
  }
  t.vocab_text_ = std::move(vocab_json);
  t.merges_text_ = std::move(merges_text);
  return t;
}

std::string Gpt2Tokenizer::token_text(std::string_view bytes) {
  static const std::array<uint32_t, 256> table = bytes_to_unicode();
  std::string text;
  for (unsigned char b : bytes) json::append_utf8(text, table[b]);
  return text;
}

Gpt2Tokenizer Gpt2Tokenizer::from_files(const std::string& vocab_path, const std::string& merges_path) {
  std::string vocab = read_input_file(vocab_path);  // the vocabulary first, so its errors come first
  return from_texts(std::move(vocab), vocab_path, read_input_file(merges_path), merges_path);
}

namespace {

// The two pairs of names, the preferred first.
constexpr std::pair<const char*, const char*> kFilePairs[] = {{"vocab.json", "merges.txt"},
                                                              {"encoder.json", "vocab.bpe"}};

}  // namespace

std::optional<Gpt2Tokenizer::FilePaths> Gpt2Tokenizer::files_in(const std::string& dir) {
  namespace fs = std::filesystem;
  for (const auto& [vocab, merges] : kFilePairs) {
    const fs::path v = fs::path(dir) / vocab, m = fs::path(dir) / merges;
    if (fs::is_regular_file(v) && fs::is_regular_file(m)) return FilePaths{v.string(), m.string()};
  }
  return std::nullopt;
}

bool Gpt2Tokenizer::folder_has_files(const std::string& dir) { return files_in(dir).has_value(); }

Gpt2Tokenizer Gpt2Tokenizer::from_folder(const std::string& dir) {
  if (const std::optional<FilePaths> files = files_in(dir)) return from_files(files->vocab, files->merges);
  throw Error(dir + ": no GPT-2 tokenizer files: looked for vocab.json + merges.txt and encoder.json + vocab.bpe");
}

// --- encoding and decoding -------------------------------------------------------------------------

void Gpt2Tokenizer::encode_ordinary(std::string_view text, std::vector<int64_t>& out) const {
  for (size_t i = 0, n = 0; i < text.size(); i += n) {
    n = gpt2_chunk_length(text, i);
    for (int32_t id : bpe_.chunk_ids(text.substr(i, n))) out.push_back(gpt2_id_[static_cast<size_t>(id)]);
  }
}

std::vector<int64_t> Gpt2Tokenizer::encode(std::string_view text, bool allow_special) const {
  std::vector<int64_t> out;
  out.reserve(text.size() / 3);
  if (!allow_special || end_of_text_ < 0) {
    encode_ordinary(text, out);
    return out;
  }
  // the pieces between the special tokens are split and merged on their own, as tiktoken does
  for (size_t start = 0;;) {
    const size_t special = text.find(kEndOfText, start);
    encode_ordinary(text.substr(start, special == std::string_view::npos ? text.npos : special - start), out);
    if (special == std::string_view::npos) return out;
    out.push_back(end_of_text_);
    start = special + kEndOfText.size();
  }
}

std::string Gpt2Tokenizer::decode(const std::vector<int64_t>& ids) const {
  size_t size = 0;
  for (int64_t id : ids) {
    if (id < 0 || id >= vocab_size()) {
      throw Error("gpt2 tokenizer: id " + std::to_string(id) + " is outside the vocabulary [0, " +
                  std::to_string(vocab_size()) + ")");
    }
    size += token_bytes_[static_cast<size_t>(id)].size();
  }
  std::string out;
  out.reserve(size);
  for (int64_t id : ids) out += token_bytes_[static_cast<size_t>(id)];
  return out;
}

int64_t Gpt2Tokenizer::id_of(std::string_view bytes, int64_t fallback) const {
  for (size_t id = 0; id < token_bytes_.size(); ++id) {
    if (token_bytes_[id] == bytes) return static_cast<int64_t>(id);
  }
  return fallback;
}

std::string Gpt2Tokenizer::to_json() const {
  json::Writer w;
  w.field("type", "gpt2").field("vocab", "vocab.json").field("merges", "merges.txt");
  return w.str() + "\n";
}

void Gpt2Tokenizer::save_files(const std::string& dir) const {
  prepare_output_dir(dir, "gpt2 tokenizer");
  write_file_atomically((std::filesystem::path(dir) / "vocab.json").string(), vocab_text_, "gpt2 tokenizer");
  write_file_atomically((std::filesystem::path(dir) / "merges.txt").string(), merges_text_, "gpt2 tokenizer");
}

}  // namespace tg::tokenizers
