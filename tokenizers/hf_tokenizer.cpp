// tokenizers/hf_tokenizer.cpp — reading Hugging Face's tokenizer.json (and tokenizer_config.json)
// into byte-level BPE tables; encoding and decoding (hf_tokenizer.h).
#include "tokenizers/hf_tokenizer.h"

#include <algorithm>
#include <filesystem>

#include "autograd/error.h"
#include "io/json.h"
#include "tokenizers/bpe_merge.h"
#include "tokenizers/gpt2_tokenizer.h"
#include "tokenizers/nfc.h"
#include "tokenizers/pre_split.h"
#include "io/user_file.h"

namespace tg::tokenizers {

namespace {

// The Split patterns tapegrad matches by hand, as tokenizer.json writes them.
constexpr std::string_view kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct Reader {
  const std::string& source;
  [[noreturn]] void fail(const std::string& what) const { throw Error(source + ": " + what); }
  std::string kind_of(const json::Value& v, const std::string& where) const {
    const json::Value* type = v.is_object() ? v.find("type") : nullptr;
    if (!type || !type->is_string()) fail(where + " has no \"type\"");
    return type->as_string();
  }
  bool flag(const json::Value& v, const char* field, bool fallback) const {
    const json::Value* f = v.find(field);
    return f && f->is_bool() ? f->as_bool() : fallback;
  }
  bool empty_or_null(const json::Value& v, const char* field) const {
    const json::Value* f = v.find(field);
    return !f || f->is_null() || (f->is_string() && f->as_string().empty());
  }
};

// A ByteLevel pre-tokenizer (or one step of a Sequence): add_prefix_space must be false.
void check_byte_level(const Reader& r, const json::Value& v, const std::string& where) {
  if (r.flag(v, "add_prefix_space", false))
    r.fail(where + ": ByteLevel with add_prefix_space true is not supported (tapegrad adds no space)");
}

HfTokenizer::PreSplit pre_split_of(const Reader& r, const json::Value& pre) {
  const std::string where = "\"pre_tokenizer\"";
  if (pre.is_null()) r.fail(where + " is null: tapegrad reads byte-level BPE with a Split or ByteLevel pre-tokenizer");
  const std::string kind = r.kind_of(pre, where);
  if (kind == "ByteLevel") {
    check_byte_level(r, pre, where);
    if (!r.flag(pre, "use_regex", true)) r.fail(where + ": ByteLevel without a regex and no Split: no pre-split to read");
    return HfTokenizer::PreSplit::kGpt2;
  }
  if (kind != "Sequence") r.fail(where + " is of type \"" + kind + "\": tapegrad reads Sequence [Split, ByteLevel] and ByteLevel");
  const json::Value* steps = pre.find("pretokenizers");
  if (!steps || !steps->is_array() || steps->size() != 2)
    r.fail(where + ": expected a Sequence of two steps, a Split and a ByteLevel");
  const json::Value& split = (*steps)[0];
  if (r.kind_of(split, where + " step 1") != "Split") r.fail(where + " step 1 is not a Split");
  const json::Value& byte_level = (*steps)[1];
  if (r.kind_of(byte_level, where + " step 2") != "ByteLevel") r.fail(where + " step 2 is not a ByteLevel");
  check_byte_level(r, byte_level, where + " step 2");
  if (r.flag(byte_level, "use_regex", false)) r.fail(where + " step 2: ByteLevel with its own regex after a Split");
  const json::Value* behavior = split.find("behavior");
  if (!behavior || !behavior->is_string() || behavior->as_string() != "Isolated" || r.flag(split, "invert", false))
    r.fail(where + ": the Split must have behavior \"Isolated\" and invert false");
  const json::Value* pattern = split.find("pattern");
  const json::Value* regex = pattern && pattern->is_object() ? pattern->find("Regex") : nullptr;
  if (!regex || !regex->is_string()) r.fail(where + ": the Split has no {\"Regex\": ...} pattern");
  const std::string& p = regex->as_string();
  if (p == kLlama3Pattern) return HfTokenizer::PreSplit::kLlama3;
  if (p == kQwen2Pattern) return HfTokenizer::PreSplit::kQwen2;
  if (p == kGpt2Pattern) return HfTokenizer::PreSplit::kGpt2;
  r.fail(where + ": the Split pattern " + json::quote(p) + " is none that tapegrad knows (GPT-2's, Llama 3's, Qwen2's)");
}

// tokenizer_config.json's "bos_token" / "eos_token": a string, {"content": ...}, or null.
std::string special_token_text(const json::Value& config, const char* field) {
  const json::Value* v = config.find(field);
  if (!v || v->is_null()) return "";
  if (v->is_string()) return v->as_string();
  if (v->is_object() && v->contains("content") && (*v)["content"].is_string()) return (*v)["content"].as_string();
  return "";
}

// tokenizer_config.json's "chat_template": a string, or transformers' list of named templates
// [{"name": "default", "template": "..."}, {"name": "tool_use", ...}], of which a chat without tools
// uses "default".
std::string chat_template_of(const json::Value& chat, const std::string& config_source) {
  if (chat.is_string()) return chat.as_string();
  const std::string field = config_source + ": \"chat_template\"";
  if (!chat.is_array())
    throw Error(field + " is " + json::Value::kind_name(chat.kind()) +
                ": expected a string or a list [{\"name\": ..., \"template\": ...}, ...]");
  std::vector<std::string> names;
  for (size_t i = 0; i < chat.size(); ++i) {
    const json::Value& entry = chat[i];
    const json::Value* name = entry.is_object() ? entry.find("name") : nullptr;
    const json::Value* text = entry.is_object() ? entry.find("template") : nullptr;
    if (!name || !name->is_string() || !text || !text->is_string())
      throw Error(field + "[" + std::to_string(i) + "]: expected {\"name\": \"...\", \"template\": \"...\"}");
    if (name->as_string() == "default") return text->as_string();
    names.push_back(json::quote(name->as_string()));
  }
  std::string listed;
  for (const std::string& n : names) listed += (listed.empty() ? "" : ", ") + n;
  throw Error(field + " lists no \"default\" template (" + (listed.empty() ? std::string("none") : listed) +
              "): which one a chat uses is unclear");
}

}  // namespace

bool HfTokenizer::is_hf_document(const json::Value& doc) { return doc.is_object() && doc.contains("model"); }

HfTokenizer HfTokenizer::from_json(const std::string& text, const std::string& source, const std::string& config_json,
                                   const std::string& config_source) {
  return from_document(json::parse(text, source), text, source, config_json, config_source);
}

HfTokenizer HfTokenizer::from_document(const json::Value& doc, const std::string& text, const std::string& source,
                                       const std::string& config_json, const std::string& config_source) {
  const Reader r{source};
  if (!is_hf_document(doc)) r.fail("not a Hugging Face tokenizer.json (no \"model\")");
  HfTokenizer t;
  t.source_ = source;
  const json::Value& model = doc["model"];
  const std::string type = r.kind_of(model, "\"model\"");
  if (type != "BPE")
    r.fail("\"model\" is of type \"" + type + "\": tapegrad reads byte-level BPE only (not Unigram or WordPiece)");
  for (const char* field : {"continuing_subword_prefix", "end_of_word_suffix", "dropout"})
    if (!r.empty_or_null(model, field)) r.fail(std::string("\"model\": \"") + field + "\" is set: unsupported by tapegrad");
  if (r.flag(model, "byte_fallback", false)) r.fail("\"model\": byte_fallback is true: unsupported by tapegrad");
  t.ignore_merges_ = r.flag(model, "ignore_merges", false);

  // the vocabulary: token (bytes_to_unicode's alphabet) -> id
  const json::Value* vocab = model.find("vocab");
  if (!vocab || !vocab->is_object()) r.fail("\"model\" has no \"vocab\" object");
  int64_t largest = -1;
  std::string bytes;
  std::unordered_map<int32_t, std::string> bytes_of;  // id -> bytes, then kept as token_bytes reads them
  for (const json::Member& m : vocab->as_object()) {
    if (!m.value.is_number()) r.fail("vocab: the id of token " + json::quote(m.key) + " is not a number");
    const int64_t id = m.value.as_int64();
    if (id < 0 || id >= (int64_t{1} << 31)) r.fail("vocab: token " + json::quote(m.key) + " has id " + std::to_string(id));
    if (!byte_level_token_bytes(m.key, bytes))
      r.fail("vocab: token " + json::quote(m.key) + " (id " + std::to_string(id) +
             ") has a character that stands for no byte (not a byte-level vocabulary)");
    if (!t.id_of_.emplace(bytes, static_cast<int32_t>(id)).second)
      r.fail("vocab: tokens " + json::quote(m.key) + " and another stand for the same bytes");
    bytes_of.emplace(static_cast<int32_t>(id), bytes);  // two tokens of one id: the first decodes it
    largest = std::max(largest, id);
  }
  const json::Value* added = doc.find("added_tokens");
  if (added && !added->is_array())
    r.fail(std::string("\"added_tokens\" is ") + json::Value::kind_name(added->kind()) +
           ": expected a list [{\"id\": ..., \"content\": \"...\"}, ...]");
  if (added) {
    for (size_t i = 0; i < added->size(); ++i) {
      const json::Value& a = (*added)[i];
      const std::string where = "added_tokens[" + std::to_string(i) + "]";
      if (!a.is_object() || !a.contains("id") || !a.contains("content") || !a["content"].is_string() ||
          a["content"].as_string().empty())
        r.fail(where + ": expected {\"id\": ..., \"content\": \"...\"}");
      for (const char* field : {"lstrip", "rstrip", "single_word"})
        if (r.flag(a, field, false)) r.fail(where + " (" + json::quote(a["content"].as_string()) + "): " + field + " true is unsupported");
      const int64_t id = a["id"].as_int64();
      if (id < 0 || id >= (int64_t{1} << 31)) r.fail(where + ": id " + std::to_string(id) + " is out of range");
      t.added_.push_back({a["content"].as_string(), static_cast<int32_t>(id), r.flag(a, "special", false)});
      t.add_to_trie(static_cast<int32_t>(t.added_.size() - 1));
      bytes_of[static_cast<int32_t>(id)] = t.added_.back().content;  // an added token's id may be a vocabulary token's
      largest = std::max(largest, id);
    }
  }
  t.vocab_size_ = largest + 1;
  t.dense_bytes_.resize(bytes_of.size());
  for (auto& [id, b] : bytes_of) {
    if (static_cast<size_t>(id) < t.dense_bytes_.size()) t.dense_bytes_[static_cast<size_t>(id)] = std::move(b);
    else t.sparse_bytes_.emplace(id, std::move(b));
  }
  for (int b = 0; b < 256; ++b) {
    const auto it = t.id_of_.find(std::string(1, static_cast<char>(b)));
    if (it == t.id_of_.end())
      r.fail("vocab: no token for byte " + std::to_string(b) + " (" + json::quote(Gpt2Tokenizer::token_text(std::string(1, static_cast<char>(b)))) +
             "); a byte-level vocabulary has all 256");
    t.byte_id_[static_cast<size_t>(b)] = it->second;
  }

  // the merges, in rank order: "a b" or ["a", "b"]
  const json::Value* merges = model.find("merges");
  if (!merges || !merges->is_array()) r.fail("\"model\" has no \"merges\" list");
  std::string left, right;
  for (size_t rank = 0; rank < merges->size(); ++rank) {
    const json::Value& m = (*merges)[rank];
    const std::string where = "merges[" + std::to_string(rank) + "]";
    std::string parts[2];
    if (m.is_string()) {
      const std::string& line = m.as_string();
      const size_t space = line.find(' ');
      if (space == std::string::npos || space == 0 || space + 1 == line.size() || line.find(' ', space + 1) != std::string::npos)
        r.fail(where + ": expected two tokens separated by one space, got " + json::quote(line));
      parts[0] = line.substr(0, space);
      parts[1] = line.substr(space + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      parts[0] = m[0].as_string();
      parts[1] = m[1].as_string();
    } else {
      r.fail(where + ": expected \"a b\" or [\"a\", \"b\"]");
    }
    int32_t ids[2];
    for (int k = 0; k < 2; ++k) {
      std::string& b = k == 0 ? left : right;
      const auto it = byte_level_token_bytes(parts[k], b) ? t.id_of_.find(b) : t.id_of_.end();
      if (it == t.id_of_.end()) r.fail(where + ": " + json::quote(parts[k]) + " is not a token of the vocabulary");
      ids[k] = it->second;
    }
    const auto made = t.id_of_.find(left + right);
    if (made == t.id_of_.end())
      r.fail(where + ": " + json::quote(parts[0] + " " + parts[1]) + " makes a token that is not in the vocabulary");
    if (t.ranks_.insert(ids[0], ids[1], static_cast<int32_t>(t.made_by_.size()))) t.made_by_.push_back(made->second);
  }

  // the normalizer, the pre-tokenizer, the decoder
  const json::Value* normalizer = doc.find("normalizer");
  if (normalizer && !normalizer->is_null()) {
    const std::string kind = r.kind_of(*normalizer, "\"normalizer\"");
    if (kind != "NFC") r.fail("\"normalizer\" is of type \"" + kind + "\": tapegrad reads none or NFC");
    t.nfc_ = true;
  }
  const json::Value* pre = doc.find("pre_tokenizer");
  t.pre_split_ = pre_split_of(r, pre ? *pre : json::parse("null", source));
  const json::Value* decoder = doc.find("decoder");
  if (decoder && !decoder->is_null() && r.kind_of(*decoder, "\"decoder\"") != "ByteLevel")
    r.fail("\"decoder\" is of type \"" + r.kind_of(*decoder, "\"decoder\"") + "\": tapegrad reads ByteLevel");

  // tokenizer_config.json: bos, eos, whether a BOS is added
  const json::Value* post = doc.find("post_processor");
  if (post && post->is_object() && post->contains("type") && (*post)["type"].is_string() &&
      (*post)["type"].as_string() == "TemplateProcessing") {
    const json::Value* single = post->find("single");
    t.add_bos_ = single && single->is_array() && single->size() > 0 && (*single)[0].is_object() &&
                 (*single)[0].contains("SpecialToken");
  }
  if (!config_json.empty()) {
    const json::Value config = json::parse(config_json, config_source);
    if (!config.is_object()) throw Error(config_source + ": expected a JSON object");
    for (auto [field, id] : {std::pair{"bos_token", &t.bos_id_}, std::pair{"eos_token", &t.eos_id_}}) {
      const std::string token = special_token_text(config, field);
      if (token.empty()) continue;
      *id = t.token_id(token);
      if (*id < 0) throw Error(config_source + ": \"" + field + "\" " + json::quote(token) + " is not a token of " + source);
    }
    if (const json::Value* add = config.find("add_bos_token"); add && add->is_bool()) t.add_bos_ = add->as_bool();
    if (const json::Value* chat = config.find("chat_template"); chat && !chat->is_null())
      t.chat_template_ = chat_template_of(*chat, config_source);
  }
  if (t.add_bos_ && t.bos_id_ < 0) t.add_bos_ = false;  // nothing to add
  t.json_text_ = text;
  t.config_text_ = config_json;
  return t;
}

HfTokenizer HfTokenizer::from_document_at(const json::Value& doc, const std::string& text, const std::string& path) {
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  const std::string config = (folder / "tokenizer_config.json").string();
  // present but not a file (a folder, a FIFO): read_input_file names what it is, rather than skip it
  std::error_code ec;
  const bool has_config = std::filesystem::exists(config, ec);
  HfTokenizer t = from_document(doc, text, path, has_config ? read_input_file(config) : "", config);
  const std::string jinja = (folder / "chat_template.jinja").string();
  if (std::filesystem::exists(jinja, ec)) t.set_chat_template_file(read_input_file(jinja));
  return t;
}

void HfTokenizer::set_chat_template_file(const std::string& jinja_text) {
  chat_template_ = jinja_text;
  chat_template_file_ = jinja_text;
}

HfTokenizer HfTokenizer::from_file(const std::string& path) {
  const std::string text = read_input_file(path);
  return from_document_at(json::parse(text, path), text, path);
}

const char* HfTokenizer::pre_split_name() const {
  switch (pre_split_) {
    case PreSplit::kLlama3: return "llama3";
    case PreSplit::kQwen2: return "qwen2";
    case PreSplit::kGpt2: break;
  }
  return "gpt2";
}

const std::string& HfTokenizer::token_bytes(int64_t id) const {
  static const std::string kNone;
  if (id >= 0 && static_cast<size_t>(id) < dense_bytes_.size()) return dense_bytes_[static_cast<size_t>(id)];
  const auto it = id >= 0 && id < vocab_size_ ? sparse_bytes_.find(static_cast<int32_t>(id)) : sparse_bytes_.end();
  return it == sparse_bytes_.end() ? kNone : it->second;
}

int64_t HfTokenizer::token_id(std::string_view text) const {
  int32_t node = 0;
  for (size_t i = 0; i < text.size() && node >= 0; ++i) node = added_next_.find(node, static_cast<unsigned char>(text[i]));
  if (!text.empty() && node >= 0 && added_ending_[static_cast<size_t>(node)] >= 0)
    return added_[static_cast<size_t>(added_ending_[static_cast<size_t>(node)])].id;
  const auto it = id_of_.find(std::string(text));
  return it == id_of_.end() ? -1 : it->second;
}

// --- the added tokens' trie ------------------------------------------------------------------------

void HfTokenizer::add_to_trie(int32_t index) {
  const std::string& content = added_[static_cast<size_t>(index)].content;
  added_first_byte_[static_cast<unsigned char>(content[0])] = true;
  int32_t node = 0;
  for (const char c : content) {
    int32_t next = added_next_.find(node, static_cast<unsigned char>(c));
    if (next < 0) {
      next = static_cast<int32_t>(added_ending_.size());
      added_ending_.push_back(-1);
      added_next_.insert(node, static_cast<unsigned char>(c), next);
    }
    node = next;
  }
  int32_t& ending = added_ending_[static_cast<size_t>(node)];
  if (ending < 0) ending = index;  // two tokens of the same content: the first in the file
}

// The longest added token that starts at text[i]: the trie walked along the text from there, the
// last node passed where a token ends. Each step is one lookup, however many tokens share the
// bytes so far.
const HfTokenizer::AddedToken* HfTokenizer::added_at(std::string_view text, size_t i) const {
  const AddedToken* best = nullptr;
  int32_t node = 0;
  for (size_t j = i; j < text.size(); ++j) {
    node = added_next_.find(node, static_cast<unsigned char>(text[j]));
    if (node < 0) break;
    if (const int32_t ending = added_ending_[static_cast<size_t>(node)]; ending >= 0) best = &added_[static_cast<size_t>(ending)];
  }
  return best;
}

// --- encoding and decoding -------------------------------------------------------------------------

size_t HfTokenizer::chunk_length(std::string_view text, size_t i) const {
  switch (pre_split_) {
    case PreSplit::kLlama3: return llama3_chunk_length(text, i, 3);
    case PreSplit::kQwen2: return llama3_chunk_length(text, i, 1);
    case PreSplit::kGpt2: break;
  }
  return gpt2_chunk_length(text, i);
}

std::span<const int32_t> HfTokenizer::chunk_ids(std::string_view chunk) const {
  if (const auto ids = cache_.find(chunk)) return *ids;
  thread_local std::vector<int32_t> ids;
  ids.clear();
  if (const auto whole = ignore_merges_ ? id_of_.find(std::string(chunk)) : id_of_.end(); whole != id_of_.end()) {
    ids.push_back(whole->second);  // ignore_merges: a chunk that is a token is that token
  } else {
    for (const char c : chunk) ids.push_back(byte_id_[static_cast<unsigned char>(c)]);
    merge_lowest_rank_first(
        ids, [this](int32_t left, int32_t right) { return ranks_.find(left, right); },
        [this](int32_t rank) { return made_by_[static_cast<size_t>(rank)]; });
  }
  if (chunk.size() > (1 << 16)) {  // rare: merged each time rather than kept
    long_chunk_ids_ = ids;
    return long_chunk_ids_;
  }
  return cache_.insert(chunk, ids);
}

void HfTokenizer::encode_ordinary(std::string_view text, std::vector<int64_t>& out) const {
  std::string normalized;
  if (nfc_ && !nfc_quick_check(text)) {
    normalized = nfc(text);
    text = normalized;
  }
  for (size_t i = 0, n = 0; i < text.size(); i += n) {
    n = chunk_length(text, i);
    for (int32_t id : chunk_ids(text.substr(i, n))) out.push_back(id);
  }
}

std::vector<int64_t> HfTokenizer::encode(std::string_view text) const {
  std::vector<int64_t> out;
  out.reserve(text.size() / 3);
  size_t start = 0;  // the text since the last added token
  for (size_t i = 0; i < text.size(); ++i) {
    if (!added_first_byte_[static_cast<unsigned char>(text[i])]) continue;
    const AddedToken* a = added_at(text, i);
    if (!a) continue;
    encode_ordinary(text.substr(start, i - start), out);
    out.push_back(a->id);
    i += a->content.size() - 1;
    start = i + 1;
  }
  encode_ordinary(text.substr(start), out);
  return out;
}

std::string HfTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (int64_t id : ids) {
    const std::string& bytes = token_bytes(id);
    if (bytes.empty())
      throw Error(source_ + ": id " + std::to_string(id) + " is no token of this tokenizer (ids in [0, " +
                  std::to_string(vocab_size()) + "))");
    out += bytes;
  }
  return out;
}

}  // namespace tg::tokenizers
