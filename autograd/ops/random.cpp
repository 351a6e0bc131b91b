// autograd/ops/random.cpp — random tensors and in-place random fills, bit-identical to PyTorch
// 1.13's CPU generator (AVX2 variant). The number crunching is in autograd/random/random_kernels.h;
// this file decides, per op, which kernel runs on which elements and in which order.
//
// Read the path table first (under "factories", below): for each op, which kernel draws which
// values, on which elements and in which order.
#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "autograd/random/generator.h"
#include "autograd/ops.h"
#include "autograd/loops.h"
#include "autograd/random/random_kernels.h"
#include "autograd/record.h"

namespace tg {
namespace {

// A null Generator* means default_generator().
Generator& generator_or_default(Generator* gen) { return gen ? *gen : default_generator(); }

// Shortest text that reads back as the same double: 2.0 -> "2", 1.5 -> "1.5".
std::string num(double v) {
  char buf[32];
  auto result = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, result.ptr);
}

// --- layout ---------------------------------------------------------------------------------

// True when t's elements exactly tile a block of memory (some permutation of contiguous
// strides, no gaps, no overlap): a contiguous tensor, or a transpose or permute of one.
// Size-1 dims do not matter. (PyTorch's is_non_overlapping_and_dense.)
bool is_dense(const Tensor& t) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) > 1) dims.push_back(d);
  std::stable_sort(dims.begin(), dims.end(),
                   [&](int64_t a, int64_t b) { return t.stride(a) < t.stride(b); });
  int64_t expected = 1;
  for (int64_t d : dims) {
    if (t.stride(d) != expected) return false;
    expected *= t.size(d);
  }
  return true;
}

// A new uninitialised tensor shaped like t, laid out as PyTorch's empty_like lays it out:
// with t's own strides when t is dense, contiguous otherwise.
Tensor empty_laid_out_like(const Tensor& t) {
  if (t.is_contiguous() || !is_dense(t)) return make_empty(t.sizes(), t.dtype());
  Tensor out = make_empty({t.numel()}, t.dtype());
  impl_of(out).sizes = t.sizes();
  impl_of(out).strides = t.strides();
  return out;
}

// Call write(offset) once per element of t, in memory order; offsets are in elements from
// element [0,...,0]. A contiguous tensor is 0, 1, ..., n-1.
template <class Write>
void for_each_in_memory_order(const Tensor& t, Write write) {
  if (t.is_contiguous()) {
    const int64_t n = t.numel();
    for (int64_t i = 0; i < n; ++i) write(i);
    return;
  }
  for (int64_t offset : memory_order_offsets(t)) write(offset);
}

// p[offset] = draw() for every element of t, in memory order.
template <class T, class Draw>
void fill_in_memory_order(const Tensor& t, Draw draw) {
  T* p = t.data_ptr<T>();
  for_each_in_memory_order(t, [&](int64_t offset) { p[offset] = draw(); });
}

// --- argument checks (before any draw) --------------------------------------------------------
// Arguments are checked before the first draw, so a rejected call leaves the generator as it was.

void check_floating_dtype(ScalarType dtype, const char* op) {
  if (!is_floating(dtype)) {
    throw Error(std::string(op) + ": dtype must be float32 or float64, got " + dtype_name(dtype));
  }
}

// uniform_(from, to): from <= to, and to - from finite in the tensor's dtype (§3).
void check_uniform_args(double from, double to, ScalarType dtype, const char* op) {
  if (!(from <= to)) {
    throw Error(std::string(op) + ": from (" + num(from) + ") must be <= to (" + num(to) + ")");
  }
  try {
    if (dtype == kFloat32) rng::uniform_params_f32(from, to);
    else rng::uniform_params_f64(from, to);
  } catch (const Error&) {
    throw Error(std::string(op) + ": to - from overflows " + dtype_name(dtype) + " (from = " +
                num(from) + ", to = " + num(to) + ")");
  }
}

void check_normal_args(double std, const char* op) {
  if (!(std >= 0.0)) throw Error(std::string(op) + ": std must be >= 0, got " + num(std));
}

void check_randint_args(int64_t low, int64_t high, const char* op) {
  if (!(low < high)) {
    throw Error(std::string(op) + ": low (" + std::to_string(low) + ") must be less than high (" +
                std::to_string(high) + ")");
  }
}

// random_ on a float tensor: both ends must be integers the dtype holds exactly, as in torch.
void check_random_bounds(int64_t low, int64_t high, ScalarType dtype) {
  if (dtype == kBool) throw Error("random_: bool tensors are not supported");
  if (!is_floating(dtype)) return;
  const int digits = dtype == kFloat32 ? 24 : 53;
  const int64_t limit = int64_t{1} << digits;
  if (low < -limit || high - 1 > limit) {
    throw Error("random_: low (" + std::to_string(low) + ") and high - 1 (" + std::to_string(high - 1) +
                ") must lie in [-2^" + std::to_string(digits) + ", 2^" + std::to_string(digits) +
                "], the integers " + dtype_name(dtype) + " holds exactly");
  }
}

// --- in-place bookkeeping -----------------------------------------------------------------------

// After the write, through the one in-place mechanism (autograd/record.h): the new values do not
// depend on the old ones, so no gradient flows back through it.
void finish_random_inplace(Tensor& self, const Tensor& old, const char* node_name) {
  finish_inplace(self, old, {}, node_name, {}, [](const BackwardArgs&) { return Grads{Tensor()}; });
}

// --- fills (no checks: the callers have made them) ------------------------------------------------

// §3: lo = a, range = b - a (in float32 for a float32 tensor); value = fma(U, range, lo).
void fill_uniform(const Tensor& t, Generator& g, double from, double to) {
  if (t.dtype() == kFloat32) {
    const rng::UniformF32 u = rng::uniform_params_f32(from, to);
    fill_in_memory_order<float>(t, [&] { return rng::uniform_f32(g, u.lo, u.range); });
  } else {
    const rng::UniformF64 u = rng::uniform_params_f64(from, to);
    fill_in_memory_order<double>(t, [&] { return rng::uniform_f64(g, u.lo, u.range); });
  }
}

// §4.1: the block path for a contiguous tensor of at least 16 elements, else the scalar path
// (Box-Muller in double with the generator's cached normal, scaled, cast to T), memory order.
template <class T>
void fill_normal_as(const Tensor& t, Generator& g, double mean, double std) {
  const int64_t n = t.numel();
  if (rng::normal_uses_block_path(n, t.is_contiguous())) {
    if constexpr (std::is_same_v<T, float>) rng::normal_fill_f32(g, t.data_ptr<float>(), n, mean, std);
    else rng::normal_fill_f64(g, t.data_ptr<double>(), n, mean, std);
    return;
  }
  fill_in_memory_order<T>(t, [&] {
    return static_cast<T>(rng::normal_scale(rng::normal_scalar(g), mean, std));
  });
}

void fill_normal(const Tensor& t, Generator& g, double mean, double std) {
  visit_floating(t.dtype(), "normal_", [&](auto tag) {
    fill_normal_as<typename decltype(tag)::type>(t, g, mean, std);
  });
}

// §5: (v mod (high - low)) + low, cast to the tensor's dtype.
void fill_randint(const Tensor& t, Generator& g, int64_t low, int64_t high) {
  if (t.dtype() == kBFloat16) throw_bfloat16_unsupported("randint");
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_in_memory_order<T>(t, [&] { return static_cast<T>(rng::randint_one(g, low, high)); });
  });
}

// --- multinomial (§7.1) ---------------------------------------------------------------------------

// The first index of the largest ratio in a row; a NaN ratio counts as the largest (its first
// occurrence wins), as torch's argmax does.
template <class T>
int64_t argmax_first(const std::vector<T>& ratio, int64_t begin, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i) {
    const T b = ratio[begin + best];
    const T r = ratio[begin + i];
    if (b != b) break;  // NaN already found
    if (r != r || r > b) best = i;
  }
  return best;
}

// multinomial(probs, 1) for a dense but permuted probs (a transpose), pc its contiguous copy
// (rows, n). torch draws the noise q = empty_like(probs).exponential_(1), and empty_like keeps
// probs' strides, so q is drawn in probs' memory order: element (r, i) does not get draw
// r*n + i as in multinomial_rows_*. Then ratio = probs / T(q), out[r] = argmax of row r.
// The rows have been checked already.
template <class T>
void multinomial_dense_permuted(int64_t* out, const Tensor& probs, const T* pc, Generator& g,
                                int64_t rows, int64_t n) {
  // noise (rows, n), in row-major positions, drawn in probs' memory order
  std::vector<T> noise(static_cast<size_t>(rows * n));
  const Shape row_major = contiguous_strides(probs.sizes());
  std::vector<int64_t> position_of(static_cast<size_t>(rows * n));
  for_each_row<2>(probs.sizes(), {probs.strides().data(), row_major.data()}, {0, 0},
                  [&](const std::array<int64_t, 2>& off, int64_t len, const std::array<int64_t, 2>& st) {
                    for (int64_t i = 0; i < len; ++i) position_of[off[0] + i * st[0]] = off[1] + i * st[1];
                  });
  // probs is dense: its memory offsets are exactly 0..rows*n-1.
  for (int64_t offset = 0; offset < rows * n; ++offset) {
    noise[position_of[offset]] = static_cast<T>(rng::exponential_one(g, 1.0));
  }
  std::vector<T> ratio(noise.size());
  for (size_t k = 0; k < ratio.size(); ++k) ratio[k] = pc[k] / noise[k];
  for (int64_t r = 0; r < rows; ++r) out[r] = argmax_first(ratio, r * n, n);
}

// torch's checks on probs (rows, n), before any draw, with the kernel's messages: every entry
// finite and >= 0, and some entry > 0 in every row.
template <class T>
void check_probability_rows(const T* pc, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    bool any_positive = false;
    for (int64_t i = 0; i < n; ++i) {
      const T p = pc[r * n + i];
      if (!(p >= 0 && p < std::numeric_limits<T>::infinity())) {
        throw Error("multinomial: probability tensor contains either inf, nan or element < 0 (row " +
                    std::to_string(r) + ", element " + std::to_string(i) + " is " +
                    num(static_cast<double>(p)) + ")");
      }
      any_positive = any_positive || p > 0;
    }
    if (!any_positive) {
      throw Error("multinomial: invalid multinomial distribution (sum of probabilities <= 0) in row " +
                  std::to_string(r));
    }
  }
}

}  // namespace

// --- factories ------------------------------------------------------------------------------------

// Path table, for the factories below and the in-place fills at the end (§ as in
// autograd/random/random_kernels.h; n = numel; "memory order" = increasing address, which is
// row-major order for a contiguous tensor, §10):
//
//   op                        path                               values, one per element
//   rand / uniform_(a, b)     always, memory order               fma(U, b - a, a)            §3
//   randn / normal_(m, s)     contiguous and n >= 16             normal_fill_f32 / _f64      §4.3-4.4
//                             n < 16 or not contiguous           fma(Box-Muller z, s, m),    §4.2
//                                                                cached normal, memory order
//   randint / random_(lo, hi) memory order                       (v mod (hi - lo)) + lo      §5
//   randperm(n)               one buffer                         forward Fisher-Yates        §7.2
//   bernoulli_(p)             memory order                       U53 < p ? 1 : 0             §6.1
//   exponential_(lambda)      memory order                       -log(1 - U53) / lambda      §7.1
//   multinomial(probs, 1)     Exp(1) noise laid out like probs   argmax_i probs_i / noise_i  §7.1
//   multinomial(probs, k)     the same noise                     topk_i probs_i / noise_i    §7.1
//     without replacement
//   multinomial(probs, k,     U53 per sample, row by row         first i with cum_i >= U53
//     replacement = true)     (cum: running sums / total, in the probs' dtype; any k, 1 too)
//   rand_like / randn_like    a new tensor laid out like t when t is dense (torch's
//                             empty_like keeps a transpose's strides), then as rand / randn

Tensor rand(const Shape& shape, Generator* gen, ScalarType dtype) {
  check_floating_dtype(dtype, "rand");
  Tensor out = make_empty(shape, dtype);
  fill_uniform(out, generator_or_default(gen), 0.0, 1.0);
  return out;
}

Tensor randn(const Shape& shape, Generator* gen, ScalarType dtype) {
  check_floating_dtype(dtype, "randn");
  Tensor out = make_empty(shape, dtype);
  fill_normal(out, generator_or_default(gen), 0.0, 1.0);
  return out;
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, Generator* gen) {
  check_randint_args(low, high, "randint");
  Tensor out = make_empty(shape, kInt64);
  fill_randint(out, generator_or_default(gen), low, high);
  return out;
}

Tensor randperm(int64_t n, Generator* gen) {
  if (n < 0) throw Error("randperm: n must be >= 0, got " + std::to_string(n));
  Tensor out = make_empty({n}, kInt64);
  rng::randperm_fill(generator_or_default(gen), out.data_ptr<int64_t>(), n);
  return out;
}

Tensor rand_like(const Tensor& t, Generator* gen) {
  check_defined(t, "rand_like", "input");
  check_floating_dtype(t.dtype(), "rand_like");
  Tensor out = empty_laid_out_like(t);
  fill_uniform(out, generator_or_default(gen), 0.0, 1.0);
  return out;
}

Tensor randn_like(const Tensor& t, Generator* gen) {
  check_defined(t, "randn_like", "input");
  check_floating_dtype(t.dtype(), "randn_like");
  Tensor out = empty_laid_out_like(t);  // a transposed t gives a non-contiguous out: scalar path
  fill_normal(out, generator_or_default(gen), 0.0, 1.0);
  return out;
}

// The noise ratios probs / q, q = Exp(1) drawn laid out like probs (torch's empty_like keeps a
// dense probs' strides, so a permuted probs gets its draws in memory order): ratio (rows, n).
template <class T>
Tensor noise_ratios(const Tensor& probs, const T* pc, Generator& g, int64_t rows, int64_t n) {
  Tensor ratio = make_empty({rows, n}, probs.dtype());
  T* out = ratio.data_ptr<T>();
  std::vector<int64_t> position_of(static_cast<size_t>(rows * n));  // memory offset -> row-major position
  if (!probs.is_contiguous() && is_dense(probs)) {
    const Shape row_major = contiguous_strides(probs.sizes());
    for_each_row<2>(probs.sizes(), {probs.strides().data(), row_major.data()}, {0, 0},
                    [&](const std::array<int64_t, 2>& off, int64_t len, const std::array<int64_t, 2>& st) {
                      for (int64_t i = 0; i < len; ++i) position_of[off[0] + i * st[0]] = off[1] + i * st[1];
                    });
  } else {
    std::iota(position_of.begin(), position_of.end(), 0);
  }
  for (int64_t offset = 0; offset < rows * n; ++offset) {
    const int64_t k = position_of[offset];
    out[k] = pc[k] / static_cast<T>(rng::exponential_one(g, 1.0));
  }
  return ratio;
}

Tensor multinomial(const Tensor& probs, int64_t num_samples, Generator* gen) {
  return multinomial(probs, num_samples, false, gen);
}

// With replacement (torch 1.13 takes this path even for k = 1): k samples per row of probs
// (rows, n) -> out (rows, k), the rows checked already. Per row, in T: the running sums
// cum_i = p_0 + ... + p_i, each divided by the total, the last set to 1. Then per sample, in
// order: u = U53 (two draws), and the sample is the first i with cum_i >= u (a binary search).
template <class T>
void multinomial_with_replacement(int64_t* out, const T* pc, Generator& g, int64_t rows, int64_t n, int64_t k) {
  std::vector<T> cum(static_cast<size_t>(n));  // cum (n)
  for (int64_t r = 0; r < rows; ++r) {
    T total = 0;
    for (int64_t i = 0; i < n; ++i) {
      total += pc[r * n + i];
      cum[i] = total;
    }
    for (int64_t i = 0; i < n; ++i) cum[i] /= total;
    cum[n - 1] = 1;
    for (int64_t s = 0; s < k; ++s) {
      const double u = rng::unit_uniform_f64(g);
      int64_t lo = 0, hi = n;
      while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (static_cast<double>(cum[mid]) < u) lo = mid + 1;
        else hi = mid;
      }
      out[r * k + s] = lo;
    }
  }
}

// multinomial(probs, k): probs (n) -> (k), probs (rows, n) -> (rows, k), int64. Without
// replacement, one sample is the argmax of probs / q (§7.1) and k samples are the k largest,
// largest first (torch's topk of the same ratios, so the same draws); with replacement, a
// binary search of the running sums per uniform draw (multinomial_with_replacement).
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement, Generator* gen) {
  check_defined(probs, "multinomial", "probs");
  check_floating(probs, "multinomial");
  if (probs.dim() != 1 && probs.dim() != 2) {
    throw Error("multinomial: probs must be 1-d or 2-d, got shape " + shape_str(probs.sizes()));
  }
  if (num_samples <= 0) {
    throw Error("multinomial: num_samples must be positive, got " + std::to_string(num_samples));
  }
  const int64_t n = probs.size(probs.dim() - 1);
  const int64_t rows = probs.dim() == 2 ? probs.size(0) : 1;
  if (n == 0) throw Error("multinomial: probs has no categories (shape " + shape_str(probs.sizes()) + ")");
  if (!replacement && num_samples > n) {
    throw Error("multinomial: cannot sample n_sample > prob_dist.size(-1) samples without replacement (" +
                std::to_string(num_samples) + " samples, " + std::to_string(n) + " categories)");
  }
  const Tensor pc = probs.detach().contiguous();
  Generator& g = generator_or_default(gen);
  Shape out_shape = probs.dim() == 2 ? Shape{rows, num_samples} : Shape{num_samples};
  if (replacement) {
    Tensor out = make_empty(out_shape, kInt64);
    visit_floating(probs.dtype(), "multinomial", [&](auto tag) {
      using T = typename decltype(tag)::type;
      check_probability_rows(pc.data_ptr<T>(), rows, n);
      multinomial_with_replacement<T>(out.data_ptr<int64_t>(), pc.data_ptr<T>(), g, rows, n, num_samples);
    });
    return out;
  }
  if (num_samples > 1) {
    Tensor ratio;
    visit_floating(probs.dtype(), "multinomial", [&](auto tag) {
      using T = typename decltype(tag)::type;
      check_probability_rows(pc.data_ptr<T>(), rows, n);
      ratio = noise_ratios<T>(probs, pc.data_ptr<T>(), g, rows, n);
    });
    return topk(ratio, num_samples, -1).indices.reshape(out_shape);
  }
  Tensor out = make_empty(out_shape, kInt64);
  // torch draws the noise into empty_like(probs): contiguous unless probs is dense and permuted.
  const bool permuted = !probs.is_contiguous() && is_dense(probs);
  visit_floating(probs.dtype(), "multinomial", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = pc.data_ptr<T>();
    check_probability_rows(p, rows, n);
    if (permuted) {
      multinomial_dense_permuted(out.data_ptr<int64_t>(), probs, p, g, rows, n);
    } else if constexpr (std::is_same_v<T, float>) {
      rng::multinomial_rows_f32(g, out.data_ptr<int64_t>(), p, rows, n);
    } else {
      rng::multinomial_rows_f64(g, out.data_ptr<int64_t>(), p, rows, n);
    }
  });
  return out;
}

// --- in place -------------------------------------------------------------------------------------

Tensor& Tensor::uniform_(double from, double to, Generator* gen) {
  check_floating(*this, "uniform_");
  check_uniform_args(from, to, dtype(), "uniform_");
  Tensor old = begin_inplace(*this, {}, "uniform_");
  fill_uniform(*this, generator_or_default(gen), from, to);
  finish_random_inplace(*this, old, "UniformBackward0");
  return *this;
}

Tensor& Tensor::normal_(double mean, double std, Generator* gen) {
  check_floating(*this, "normal_");
  check_normal_args(std, "normal_");
  Tensor old = begin_inplace(*this, {}, "normal_");
  fill_normal(*this, generator_or_default(gen), mean, std);
  finish_random_inplace(*this, old, "NormalBackward0");
  return *this;
}

// §6.1: 1 where U53 < p, else 0; any dtype.
Tensor& Tensor::bernoulli_(double p, Generator* gen) {
  if (!(p >= 0.0 && p <= 1.0)) throw Error("bernoulli_: p must be in [0, 1], got " + num(p));
  if (dtype() == kBFloat16) throw_bfloat16_unsupported("bernoulli_");
  Tensor old = begin_inplace(*this, {}, "bernoulli_");
  Generator& g = generator_or_default(gen);
  visit_dtype(dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_in_memory_order<T>(*this, [&] { return rng::bernoulli_one(g, p) ? T(1) : T(0); });
  });
  finish_random_inplace(*this, old, "BernoulliBackward1");
  return *this;
}

// §7.1: (-1 / lambda) * log(1 - U53) in double, cast to the dtype.
Tensor& Tensor::exponential_(double lambda, Generator* gen) {
  check_floating(*this, "exponential_");
  if (!(lambda >= 0.0)) throw Error("exponential_: lambda must be >= 0, got " + num(lambda));
  Tensor old = begin_inplace(*this, {}, "exponential_");
  Generator& g = generator_or_default(gen);
  visit_floating(dtype(), "exponential_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_in_memory_order<T>(*this, [&] { return static_cast<T>(rng::exponential_one(g, lambda)); });
  });
  finish_random_inplace(*this, old, "ExponentialBackward0");
  return *this;
}

// §5: integers in [low, high) as randint draws them; float tensors hold them exactly.
Tensor& Tensor::random_(int64_t low, int64_t high, Generator* gen) {
  check_randint_args(low, high, "random_");
  check_random_bounds(low, high, dtype());
  Tensor old = begin_inplace(*this, {}, "random_");
  fill_randint(*this, generator_or_default(gen), low, high);
  finish_random_inplace(*this, old, "RandomBackward1");
  return *this;
}

}  // namespace tg
