// models/generation/generate.cpp — sampling the next token and the generation loop.
#include "models/generation/generate.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/error.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "io/json.h"
#include "tokenizers/hf_tokenizer.h"

namespace tg::models {

void SamplingOptions::validate() const {
  if (!(temperature == 0.0 || (temperature >= kMinTemperature && temperature <= kMaxTemperature)))
  {
    std::ostringstream range;  // "[0.0001, 100]"
    range << "[" << kMinTemperature << ", " << kMaxTemperature << "]";
    throw Error("generate: temperature must be 0 (greedy) or in " + range.str() + ", got " + nn::python_float(temperature));
  }
  if (top_k < 0) throw Error("generate: top_k must be >= 0 (0 = off), got " + std::to_string(top_k));
  if (!(top_p > 0.0 && top_p <= 1.0)) throw Error("generate: top_p must be in (0, 1], got " + nn::python_float(top_p));
  if (stop_token < -1)
    throw Error("generate: stop_token must be a token id, or -1 (none), got " + std::to_string(stop_token));
  if (keep_when_full < 0)
    throw Error("generate: keep_when_full must be >= 0 (0 = slide the window), got " + std::to_string(keep_when_full));
}

namespace {

// The ids' mask (V): true for each id of suppress_tokens (each in [0, V)).
std::vector<bool> suppressed_mask(const std::vector<int64_t>& suppress_tokens, int64_t V) {
  std::vector<bool> mask(static_cast<size_t>(V), false);
  for (int64_t id : suppress_tokens) {
    if (id < 0 || id >= V)
      throw Error("generate: suppress_tokens holds id " + std::to_string(id) + ", outside the logits' [0, " +
                  std::to_string(V) + ")");
    mask[static_cast<size_t>(id)] = true;
  }
  return mask;
}

// Throws unless each row of logits (B,V) is a distribution to pick from: no NaN, no +inf, and
// some id that is not suppressed above -inf. A model whose weights or RoPE tables overflowed
// gives NaN everywhere, and argmax would write id 0 as if it were the answer.
void check_finite(const Tensor& logits, const std::vector<bool>& suppressed, int64_t position) {
  const Tensor values = logits.to(kFloat32).contiguous();  // (B,V)
  const int64_t B = values.size(0), V = values.size(1);
  const float* data = values.data_ptr<float>();
  const std::string where = position >= 0 ? "at position " + std::to_string(position) + " " : "";
  auto fail = [&](int64_t b, const std::string& what) {
    throw Error("generate: the logits " + where + "are not finite (" + what + (B > 1 ? " in row " + std::to_string(b) : "") +
                "): the model's weights or config overflow; no token is written");
  };
  for (int64_t b = 0; b < B; ++b) {
    bool any_id = false;
    for (int64_t v = 0; v < V; ++v) {
      const float x = data[b * V + v];
      if (std::isnan(x)) fail(b, "nan at id " + std::to_string(v));
      if (x == kInf) fail(b, "inf at id " + std::to_string(v));
      any_id = any_id || (x != -kInf && !suppressed[static_cast<size_t>(v)]);
    }
    if (!any_id) fail(b, "every id that may be written is -inf");
  }
}

}  // namespace

Tensor sample_next_token(const Tensor& logits, const SamplingOptions& options, Generator* gen, int64_t position) {
  options.validate();
  if (logits.dim() != 2 || !logits.is_floating_point()) {
    throw Error("generate: expected floating logits of shape (batch, vocab_size), got " + shape_str(logits.sizes()) +
                " " + dtype_name(logits.dtype()));
  }
  NoGradGuard no_grad;
  const int64_t V = logits.size(1);
  const std::vector<bool> suppressed = suppressed_mask(options.suppress_tokens, V);
  check_finite(logits, suppressed, position);
  Tensor allowed = logits;  // (B,V)
  if (!options.suppress_tokens.empty()) {
    Tensor mask = zeros({V}, kBool);
    bool* m = mask.data_ptr<bool>();
    for (int64_t v = 0; v < V; ++v) m[v] = suppressed[static_cast<size_t>(v)];
    allowed = logits.masked_fill(mask, -kInf);
  }
  if (options.temperature == 0.0) return argmax(allowed, -1, /*keepdim=*/true);  // (B,1)
  Tensor scaled = allowed / options.temperature;                                  // (B,V)
  if (options.top_k > 0 && options.top_k < V) {
    Tensor kth = topk(scaled, options.top_k, -1).values.narrow(1, options.top_k - 1, 1);  // (B,1)
    scaled = scaled.masked_fill(scaled < kth, -kInf);
  }
  Tensor probs = softmax(scaled, -1);  // (B,V)
  if (options.top_p < 1.0) {
    ValuesIndices sorted = sort(probs, -1, /*descending=*/true);
    // probability mass before each token, in descending order: drop once it exceeds top_p
    Tensor before = cumsum(sorted.values, -1) - sorted.values;
    Tensor kept = sorted.values.masked_fill(before > options.top_p, 0.0);
    probs = scatter_add(zeros_like(probs), -1, sorted.indices, kept);
  }
  return multinomial(probs, 1, gen);  // (B,1)
}

std::vector<int64_t> ids_the_tokenizer_cannot_write(const tokenizers::Tokenizer& tokenizer, int64_t vocabulary_size) {
  const tokenizers::HfTokenizer* hf = tokenizer.hf();
  const int64_t known = tokenizer.vocab_size();
  std::vector<int64_t> ids;
  for (int64_t id = 0; id < vocabulary_size; ++id)
    if (id >= known || (hf && hf->token_bytes(id).empty())) ids.push_back(id);  // "": an id no token has
  return ids;
}

namespace {

// The ids' buffer starts with room for this many new tokens and doubles when full, so a large
// max_new_tokens costs memory only as the tokens are written (amortised one copy per token).
constexpr int64_t kFirstCapacity = 256;

// out (B, n) copied into a buffer twice as wide (at most limit columns); the new columns unset.
Tensor grown(const Tensor& out, int64_t limit) {
  const int64_t n = out.size(1);
  Tensor bigger = empty({out.size(0), std::min(limit, 2 * n)}, kInt64);
  bigger.narrow(1, 0, n).copy_(out);
  return bigger;
}

}  // namespace

Tensor generate(CausalLM& model, const Tensor& idx, int64_t max_new_tokens, const SamplingOptions& options,
                Generator* gen, const std::function<void(const Tensor&)>& on_token) {
  options.validate();
  if (max_new_tokens < 0) throw Error("generate: max_new_tokens must be >= 0, got " + std::to_string(max_new_tokens));
  if (idx.dim() != 2 || idx.dtype() != kInt64 || idx.size(1) == 0) {
    throw Error("generate: expected a prompt of token ids of shape (batch, num_tokens >= 1), dtype int64, got " +
                shape_str(idx.sizes()) + " " + dtype_name(idx.dtype()));
  }
  const int64_t context = model.context_length();
  if (options.keep_when_full > context) {
    throw Error("generate: keep_when_full (" + std::to_string(options.keep_when_full) +
                ") exceeds the model's context_length (" + std::to_string(context) + ")");
  }
  const int64_t keep = options.keep_when_full > 0 ? options.keep_when_full : context;
  NoGradGuard no_grad;
  const int64_t B = idx.size(0), prompt = idx.size(1);
  // (B, capacity), filled as it goes; it grows with what is written, never to max_new_tokens up front
  Tensor out = empty({B, prompt + std::min<int64_t>(max_new_tokens, kFirstCapacity)}, kInt64);
  out.narrow(1, 0, prompt).copy_(idx);
  GPTCache cache;              // holds out[start, T - 1) unless fresh
  bool fresh = true;           // the window (re)starts: run all of it
  int64_t start = std::max<int64_t>(0, prompt - context);
  std::vector<bool> stopped(static_cast<size_t>(B), false);  // the rows that wrote options.stop_token
  for (int64_t T = prompt; T < prompt + max_new_tokens; ++T) {
    if (T - start > context) {
      start = T - keep;
      fresh = true;
    }
    Tensor logits;  // (B, t, V)
    if (!options.use_kv_cache) {
      logits = model.forward(out.narrow(1, start, T - start));
    } else if (fresh) {
      cache.clear();
      logits = model.forward(out.narrow(1, start, T - start), cache);
      fresh = false;
    } else {
      logits = model.forward(out.narrow(1, T - 1, 1), cache);  // only the newest token
    }
    const Tensor next = sample_next_token(logits.select(1, logits.size(1) - 1), options, gen, T - 1);  // (B,1)
    if (T == out.size(1)) out = grown(out, prompt + max_new_tokens);
    out.narrow(1, T, 1).copy_(next);
    if (on_token) on_token(next);
    if (options.stop_token >= 0) {
      const Tensor written = next.contiguous();  // (B,1)
      const int64_t* ids = written.data_ptr<int64_t>();
      for (int64_t b = 0; b < B; ++b)
        if (ids[b] == options.stop_token) stopped[static_cast<size_t>(b)] = true;
      if (std::all_of(stopped.begin(), stopped.end(), [](bool s) { return s; }))
        return out.narrow(1, 0, T + 1).contiguous();
    }
  }
  return out;  // grown to exactly prompt + max_new_tokens columns
}

std::string write_text(CausalLM& model, const tokenizers::Tokenizer& tokenizer, const std::vector<int64_t>& prompt,
                       int64_t tokens, const SamplingOptions& options, Generator& gen, std::ostream* stream,
                       std::vector<int64_t>* ids_out) {
  const Tensor idx = from_vector(prompt, {1, static_cast<int64_t>(prompt.size())});  // (1, T)
  // streamed: each token's text as it comes (a token's bytes: decode is byte for byte), whole
  // characters only, the rest held back until they are whole; the end-of-text is never printed
  std::string pending = stream ? tokenizer.decode(prompt) : std::string();
  bool ended = false;
  auto print_whole = [&](size_t keep_back) {
    const size_t n = pending.size() - keep_back;
    stream->write(pending.data(), static_cast<std::streamsize>(n)).flush();
    pending.erase(0, n);
  };
  auto on_token = [&](const Tensor& next) {  // (1,1)
    const int64_t id = next.item<int64_t>();
    ended = ended || id == options.stop_token;
    if (ended) return;
    pending += tokenizer.decode({id});
    print_whole(pending.size() - json::utf8_whole_prefix(pending));
  };
  if (stream) print_whole(pending.size() - json::utf8_whole_prefix(pending));
  SamplingOptions writable = options;  // only ids the tokenizer decodes (a padded vocabulary's are not)
  writable.suppress_tokens = ids_the_tokenizer_cannot_write(tokenizer, model.vocab_size());
  std::vector<int64_t> ids =
      generate(model, idx, tokens, writable, &gen, stream ? std::function<void(const Tensor&)>(on_token) : nullptr)
          .tolist<int64_t>();
  if (stream) print_whole(0);
  if (options.stop_token >= 0) {  // generation stopped at it: cut it off
    const auto stop = std::find(ids.begin() + static_cast<std::ptrdiff_t>(prompt.size()), ids.end(), options.stop_token);
    ids.erase(stop, ids.end());
  }
  if (ids_out) *ids_out = ids;
  return tokenizer.decode(ids);
}

}  // namespace tg::models
