// tokenizers/tokenizer.cpp — characters <-> ids. UTF-8 is read and written by json's
// decode_utf8 and append_utf8 (io/json.h), the project's one UTF-8 code.
#include "tokenizers/tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "autograd/error.h"
#include "io/atomic_file.h"
#include "io/json.h"
#include "io/flags.h"
#include "io/user_file.h"

namespace tg::tokenizers {

namespace {

using json::append_utf8;
using json::decode_utf8;

// The text's symbols with the byte offset each starts at.
void symbols_of(const std::string& text, bool utf8, std::vector<uint32_t>& symbols, std::vector<size_t>& offsets) {
  symbols.clear();
  offsets.clear();
  if (utf8) {
    if (!decode_utf8(text, symbols, &offsets)) throw Error("tokenizer: the text is not valid UTF-8");
  } else {
    for (size_t i = 0; i < text.size(); ++i) {
      symbols.push_back(static_cast<unsigned char>(text[i]));
      offsets.push_back(i);
    }
  }
}

std::string describe(uint32_t symbol, bool utf8) {
  std::string shown;
  if (symbol >= 0x20 && symbol != 0x7f && (utf8 || symbol < 0x80)) append_utf8(shown, symbol);
  char code[16];
  std::snprintf(code, sizeof code, utf8 ? "U+%04X" : "byte 0x%02x", symbol);
  return shown.empty() ? std::string(code) : "'" + shown + "' (" + code + ")";
}

}  // namespace

CharTokenizer CharTokenizer::from_text(const std::string& text) {
  CharTokenizer t;
  std::vector<uint32_t> symbols;
  std::vector<size_t> offsets;
  t.utf8_ = decode_utf8(text, symbols);
  if (!t.utf8_) symbols_of(text, false, symbols, offsets);  // not UTF-8: one symbol per byte
  std::set<uint32_t> distinct(symbols.begin(), symbols.end());
  t.symbols_.assign(distinct.begin(), distinct.end());
  return t;
}

std::vector<int64_t> CharTokenizer::encode(const std::string& text) const {
  std::vector<uint32_t> symbols;
  std::vector<size_t> offsets;
  symbols_of(text, utf8_, symbols, offsets);
  std::vector<int64_t> ids;
  ids.reserve(symbols.size());
  for (size_t i = 0; i < symbols.size(); ++i) {
    auto it = std::lower_bound(symbols_.begin(), symbols_.end(), symbols[i]);
    if (it == symbols_.end() || *it != symbols[i]) {
      throw Error("tokenizer: character " + describe(symbols[i], utf8_) + " at byte " + std::to_string(offsets[i]) +
                  " is not in the vocabulary (" + std::to_string(symbols_.size()) + " characters)");
    }
    ids.push_back(it - symbols_.begin());
  }
  return ids;
}

int64_t CharTokenizer::id_or(uint32_t symbol, int64_t fallback) const {
  auto it = std::lower_bound(symbols_.begin(), symbols_.end(), symbol);
  return it != symbols_.end() && *it == symbol ? it - symbols_.begin() : fallback;
}

std::string CharTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (int64_t id : ids) {
    if (id < 0 || id >= vocab_size())
      throw Error("tokenizer: id " + std::to_string(id) + " is outside the vocabulary [0, " +
                  std::to_string(vocab_size()) + ")");
    if (utf8_) append_utf8(out, symbols_[static_cast<size_t>(id)]);
    else out += static_cast<char>(symbols_[static_cast<size_t>(id)]);
  }
  return out;
}

std::string CharTokenizer::to_json() const {
  json::Writer symbols = json::Writer::array();
  for (const auto symbol : symbols_) symbols.item(symbol);
  json::Writer w;
  w.field("type", "char").field("kind", utf8_ ? "utf8" : "bytes").field("symbols", symbols);
  return w.str() + "\n";
}

CharTokenizer CharTokenizer::from_json(const std::string& text, const std::string& source) {
  const json::Value doc = json::parse(text, source);
  auto fail = [&](const std::string& what) -> CharTokenizer { throw Error(source + ": " + what); };
  if (!doc.is_object() || !doc.contains("kind") || !doc.contains("symbols"))
    return fail("expected an object with \"kind\" and \"symbols\"");
  CharTokenizer t;
  const std::string kind = doc["kind"].as_string();
  if (kind != "utf8" && kind != "bytes") return fail("\"kind\" must be \"utf8\" or \"bytes\", got \"" + kind + "\"");
  t.utf8_ = kind == "utf8";
  const json::Value& list = doc["symbols"];
  for (size_t i = 0; i < list.size(); ++i) {
    const int64_t s = list[i].as_int64();
    const int64_t limit = t.utf8_ ? 0x10ffff : 0xff;
    if (s < 0 || s > limit || (!t.symbols_.empty() && s <= t.symbols_.back()))
      return fail("symbol " + std::to_string(i) + " (" + std::to_string(s) + ") is out of range or not ascending");
    t.symbols_.push_back(static_cast<uint32_t>(s));
  }
  if (t.symbols_.empty()) return fail("the vocabulary is empty");
  return t;
}

int64_t CharTokenizer::bytes_of(int64_t id) const {
  const uint32_t s = symbols_.at(static_cast<size_t>(id));
  if (!utf8_) return 1;
  return s < 0x80 ? 1 : s < 0x800 ? 2 : s < 0x10000 ? 3 : 4;
}

// --- a run's tokenizer, either kind --------------------------------------------------------------

namespace {

// The file a "gpt2" tokenizer.json names under key, in its folder: a relative path that stays
// there (no root, no ".." that climbs out), so a tokenizer.json handed over cannot make the
// program read "/etc/passwd" or "../../secret".
std::string gpt2_file_named(const json::Value& doc, const char* key, const std::string& source) {
  namespace fs = std::filesystem;
  if (!doc.contains(key) || !doc[key].is_string())
    throw Error(source + ": a \"gpt2\" tokenizer names its files: \"" + key + "\" is missing or not a string");
  const std::string& name = doc[key].as_string();
  const fs::path relative = fs::path(name).lexically_normal();
  const bool inside = !name.empty() && !relative.has_root_path() && !relative.empty() && *relative.begin() != ".." &&
                      relative != ".";
  if (!inside)
    throw Error(source + ": \"" + key + "\" is " + json::quote(name) + ": a \"gpt2\" tokenizer's files must be in its "
                "folder (a relative path without \"..\")");
  return (fs::path(source).parent_path() / relative).string();
}

Gpt2Tokenizer::FilePaths gpt2_files_named(const json::Value& doc, const std::string& source) {
  return {gpt2_file_named(doc, "vocab", source), gpt2_file_named(doc, "merges", source)};
}

}  // namespace

namespace {

// A char or bpe tokenizer.json's "eos_token" (Tokenizer's header), or "" when it has none.
std::string end_of_text_in(const json::Value& doc, const std::string& source) {
  const json::Value* eos = doc.is_object() ? doc.find("eos_token") : nullptr;
  if (!eos) return "";
  if (!eos->is_string() || eos->as_string().empty())
    throw Error(source + ": \"eos_token\" must be a token's text, such as \"<|endoftext|>\"; got " +
                json::Value::kind_name(eos->kind()) + (eos->is_string() ? " (empty)" : ""));
  return eos->as_string();
}

}  // namespace

Tokenizer Tokenizer::from_json(const std::string& text, const std::string& source) {
  const json::Value doc = json::parse(text, source);
  if (HfTokenizer::is_hf_document(doc)) return HfTokenizer::from_document_at(doc, text, source);
  const json::Value* type = doc.is_object() ? doc.find("type") : nullptr;
  const std::string end_of_text = end_of_text_in(doc, source);
  auto with_special = [&](Tokenizer t) { return end_of_text.empty() ? t : std::move(t).with_end_of_text(end_of_text); };
  if (type && type->is_string() && type->as_string() == "bpe") return with_special(BpeTokenizer::from_json(text, source));
  if (type && type->is_string() && type->as_string() == "gpt2") {
    if (!end_of_text.empty())
      throw Error(source + ": a \"gpt2\" tokenizer has its own end-of-text: \"eos_token\" is for char and bpe");
    const Gpt2Tokenizer::FilePaths files = gpt2_files_named(doc, source);
    return Gpt2Tokenizer::from_files(files.vocab, files.merges);
  }
  if (type && (!type->is_string() || type->as_string() != "char")) {
    throw Error(source + ": \"type\" must be \"char\", \"bpe\" or \"gpt2\"");
  }
  return with_special(CharTokenizer::from_json(text, source));
}

Tokenizer Tokenizer::with_end_of_text(std::string_view text) && {
  if (is_gpt2() || is_hf()) throw Error(std::string("a ") + type() + " tokenizer has its own special tokens");
  end_of_text_ = std::string(text);
  return std::move(*this);
}

int64_t Tokenizer::base_vocab_size() const {
  return std::visit([](const auto& t) { return t.vocab_size(); }, impl_);
}

const char* Tokenizer::type() const { return is_hf() ? "hf" : is_gpt2() ? "gpt2" : is_bpe() ? "bpe" : "char"; }

std::vector<int64_t> Tokenizer::encode_base(const std::string& text, bool allow_special) const {
  if (is_gpt2()) return std::get<Gpt2Tokenizer>(impl_).encode(text, allow_special);
  return std::visit([&](const auto& t) { return t.encode(text); }, impl_);
}

std::vector<int64_t> Tokenizer::encode_with_bos(const std::string& text) const {
  std::vector<int64_t> ids;
  if (const HfTokenizer* bos = hf(); bos && bos->add_bos()) ids.push_back(bos->bos_id());
  for (int64_t id : encode(text)) ids.push_back(id);
  return ids;
}

// The special token, where it is allowed, cuts the text; each piece between is encoded as usual.
std::vector<int64_t> Tokenizer::encode(const std::string& text, bool allow_special) const {
  if (end_of_text_.empty() || !allow_special) return encode_base(text, allow_special);
  std::vector<int64_t> ids;
  size_t start = 0;
  for (size_t at = text.find(end_of_text_); ; at = text.find(end_of_text_, start)) {
    const std::string_view piece = std::string_view(text).substr(start, at == std::string::npos ? std::string::npos : at - start);
    if (!piece.empty()) {
      const std::vector<int64_t> piece_ids = encode_base(std::string(piece), allow_special);
      ids.insert(ids.end(), piece_ids.begin(), piece_ids.end());
    }
    if (at == std::string::npos) return ids;
    ids.push_back(base_vocab_size());
    start = at + end_of_text_.size();
  }
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids) const {
  auto decode_base = [&](const std::vector<int64_t>& some) { return std::visit([&](const auto& t) { return t.decode(some); }, impl_); };
  if (end_of_text_.empty()) return decode_base(ids);
  std::string out;
  std::vector<int64_t> run;  // the ids since the last special token
  for (const int64_t id : ids) {
    if (id != base_vocab_size()) {
      run.push_back(id);
      continue;
    }
    out += decode_base(run) + end_of_text_;
    run.clear();
  }
  return out + decode_base(run);
}

int64_t Tokenizer::vocab_size() const { return base_vocab_size() + (end_of_text_.empty() ? 0 : 1); }

std::string Tokenizer::to_json() const {
  const std::string base = std::visit([](const auto& t) { return t.to_json(); }, impl_);
  if (end_of_text_.empty()) return base;
  json::Writer w;  // the tokenizer's own fields, then the special token
  const json::Value fields = json::parse(base, "tokenizer");
  for (const json::Member& m : fields.as_object()) w.field(m.key, m.value);
  w.field("eos_token", end_of_text_);
  return w.str() + "\n";
}

void Tokenizer::save(const std::string& dir) const {
  prepare_output_dir(dir, "tokenizer");
  write_file_atomically((std::filesystem::path(dir) / "tokenizer.json").string(), to_json(), "tokenizer");
  if (is_hf() && !std::get<HfTokenizer>(impl_).config_text().empty())
    write_file_atomically((std::filesystem::path(dir) / "tokenizer_config.json").string(),
                          std::get<HfTokenizer>(impl_).config_text(), "tokenizer");
  if (is_hf() && !std::get<HfTokenizer>(impl_).chat_template_file().empty())
    write_file_atomically((std::filesystem::path(dir) / "chat_template.jinja").string(),
                          std::get<HfTokenizer>(impl_).chat_template_file(), "tokenizer");
  if (is_gpt2()) std::get<Gpt2Tokenizer>(impl_).save_files(dir);
}

int64_t Tokenizer::newline_or(int64_t fallback) const {
  if (is_bpe()) return '\n';  // the byte's own id
  if (is_gpt2()) return std::get<Gpt2Tokenizer>(impl_).id_of("\n", fallback);
  if (is_hf()) {
    const int64_t id = std::get<HfTokenizer>(impl_).token_id("\n");
    return id >= 0 ? id : fallback;
  }
  return std::get<CharTokenizer>(impl_).id_or(U'\n', fallback);
}

int64_t Tokenizer::end_of_text_id() const {
  if (is_hf()) return std::get<HfTokenizer>(impl_).eos_id();
  if (!end_of_text_.empty()) return base_vocab_size();
  return is_gpt2() ? std::get<Gpt2Tokenizer>(impl_).end_of_text_id() : -1;
}

std::vector<int64_t> Tokenizer::bytes_per_id() const {
  std::vector<int64_t> bytes(static_cast<size_t>(vocab_size()));
  for (int64_t id = 0; id < base_vocab_size(); ++id) {
    int64_t n = 0;
    if (is_bpe()) n = static_cast<int64_t>(std::get<BpeTokenizer>(impl_).token_bytes(id).size());
    else if (is_gpt2()) n = static_cast<int64_t>(std::get<Gpt2Tokenizer>(impl_).token_bytes(id).size());
    else if (is_hf()) n = static_cast<int64_t>(std::get<HfTokenizer>(impl_).token_bytes(id).size());
    else n = std::get<CharTokenizer>(impl_).bytes_of(id);
    bytes[static_cast<size_t>(id)] = n;
  }
  if (!end_of_text_.empty()) bytes.back() = static_cast<int64_t>(end_of_text_.size());
  return bytes;
}

// --- loading from a path -------------------------------------------------------------------------

namespace {

// A folder with both tapegrad's tokenizer.json and GPT-2's files: the same tokenizer when the
// tokenizer.json is a "gpt2" one naming the pair from_folder would read (as train_gpt writes a
// run's folder); anything else is two tokenizers, and which one is meant is a guess: refused.
void check_one_tokenizer(const std::string& dir, const json::Value& doc, const std::string& json_path) {
  namespace fs = std::filesystem;
  const Gpt2Tokenizer::FilePaths pair = *Gpt2Tokenizer::files_in(dir);
  const json::Value* type = doc.is_object() ? doc.find("type") : nullptr;
  if (type && type->is_string() && type->as_string() == "gpt2") {
    const Gpt2Tokenizer::FilePaths named = gpt2_files_named(doc, json_path);
    auto same = [](const std::string& a, const std::string& b) {
      return fs::path(a).lexically_normal() == fs::path(b).lexically_normal();
    };
    if (same(named.vocab, pair.vocab) && same(named.merges, pair.merges)) return;
  }
  throw Error(dir + ": two tokenizers: " + json_path + " and GPT-2's " + pair.vocab + " + " + pair.merges +
              ", which it does not name: which one is meant is unclear; move one of them out of the folder");
}

}  // namespace

Tokenizer load_tokenizer(const std::string& path) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(path)) {
    if (!fs::exists(path)) throw Error(path + ": no such file or folder (expected a tokenizer.json or a folder)");
    return Tokenizer::from_json(read_input_file(path), path);
  }
  const std::string json_path = (fs::path(path) / "tokenizer.json").string();
  const bool has_json = fs::is_regular_file(json_path);
  if (has_json) {
    const std::string text = read_input_file(json_path);
    const json::Value doc = json::parse(text, json_path);
    if (!HfTokenizer::is_hf_document(doc)) {  // tapegrad's own
      if (Gpt2Tokenizer::folder_has_files(path)) check_one_tokenizer(path, doc, json_path);
      return Tokenizer::from_json(text, json_path);
    }
    if (!Gpt2Tokenizer::folder_has_files(path))  // Hugging Face's, with no GPT-2 files beside it
      return HfTokenizer::from_document_at(doc, text, json_path);
  }
  if (Gpt2Tokenizer::folder_has_files(path)) return Gpt2Tokenizer::from_folder(path);
  throw Error(path + ": no tokenizer in this folder: looked for a tokenizer.json (tapegrad's or Hugging Face's), "
              "vocab.json + merges.txt and encoder.json + vocab.bpe");
}

}  // namespace tg::tokenizers
