// autograd/kernels/row_kernels.cpp — the float32 row loops of row_kernels.h (the math, and why
// the results do not depend on the thread count, are there).
//
// Each loop is written once, as an always-inlined function of a block of rows, and compiled for
// every instruction set by kernels::run_on (isa.h); the rows run the AVX2 copy at most. They run
// layer_norm three to four times as fast as the double loops (measured in docs/performance.md);
// rms_norm's are layer_norm's without the mean and the bias.
#include "autograd/kernels/row_kernels.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "autograd/runtime/parallel.h"
#include "autograd/runtime/work_split.h"

namespace tg::row_kernels {

namespace {

// A chunk of rows handed to one thread: at least work_split's bytes a thread, counting a row of C
// floats as read once and written once.
int64_t row_grain(int64_t C) { return work_split::grain_for(C * 2 * int64_t{sizeof(float)}); }

// sum_c term(c) over c in [0, C): lane j adds the terms c = j, j + kLanes, ...; the lanes are
// added in order, then the terms past the last whole block of kLanes, one by one.
template <class Term>
[[gnu::always_inline]] inline float lane_sum(int64_t C, Term term) {
  float lanes[kLanes] = {};
  int64_t c = 0;
  for (; c + kLanes <= C; c += kLanes)
    for (int j = 0; j < kLanes; ++j) lanes[j] += term(c + j);
  float s = lanes[0];
  for (int j = 1; j < kLanes; ++j) s += lanes[j];
  for (; c < C; ++c) s += term(c);
  return s;
}

// s / C rounded once.
float mean_of(float s, int64_t C) { return static_cast<float>(static_cast<double>(s) / static_cast<double>(C)); }

// Rows [r0, r1) of the forward; w and b are never null here (ones and zeros stand in).
[[gnu::always_inline]] inline void forward_rows(float* out, float* mean, float* rstd, const float* inp, const float* w,
                                                const float* b, int64_t r0, int64_t r1, int64_t C, double eps) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* x = inp + r * C;  // x (C)
    float* y = out + r * C;        // y (C)
    // the mean, then corrected by the mean of the differences from it (a row far from zero
    // rounds its float sum by more than its spread can afford), then the variance about it
    const float m0 = mean_of(lane_sum(C, [&](int64_t c) { return x[c]; }), C);
    const float m = m0 + mean_of(lane_sum(C, [&](int64_t c) { return x[c] - m0; }), C);
    const float var = lane_sum(C, [&](int64_t c) {
      const float d = x[c] - m;
      return d * d;
    });
    const float rs = static_cast<float>(1.0 / std::sqrt(static_cast<double>(var) / static_cast<double>(C) + eps));
    for (int64_t c = 0; c < C; ++c) y[c] = (x[c] - m) * rs * w[c] + b[c];
    mean[r] = m;
    rstd[r] = rs;
  }
}

// Row blocks [k0, k1) of the backward (block k: rows [k kRowBlock, (k+1) kRowBlock) within R).
// dinp as the double loop's formula; block k's sums of g * norm and of g go to dw_blocks and
// db_blocks (kRowBlock rows each, (blocks, C)) when those are not null. w is never null.
[[gnu::always_inline]] inline void backward_blocks(float* dinp, double* dw_blocks, double* db_blocks,
                                                   const float* dout, const float* inp, const float* w,
                                                   const float* mean, const float* rstd, int64_t k0, int64_t k1,
                                                   int64_t R, int64_t C) {
  for (int64_t k = k0; k < k1; ++k) {
    double* dw = dw_blocks ? dw_blocks + k * C : nullptr;  // dw (C), this block's sum
    double* db = db_blocks ? db_blocks + k * C : nullptr;  // db (C)
    if (dw) std::fill(dw, dw + C, 0.0);
    if (db) std::fill(db, db + C, 0.0);
    for (int64_t r = k * kRowBlock; r < std::min(R, (k + 1) * kRowBlock); ++r) {
      const float* g = dout + r * C;  // g (C)
      const float* x = inp + r * C;   // x (C)
      const float m = mean[r], rs = rstd[r];
      if (dinp) {
        float* dx = dinp + r * C;  // dx (C)
        const float dnorm_mean = mean_of(lane_sum(C, [&](int64_t c) { return g[c] * w[c]; }), C);
        const float dnorm_norm_mean =
            mean_of(lane_sum(C, [&](int64_t c) { return g[c] * w[c] * ((x[c] - m) * rs); }), C);
        for (int64_t c = 0; c < C; ++c) {
          const float norm = (x[c] - m) * rs;
          dx[c] = rs * (g[c] * w[c] - dnorm_mean - norm * dnorm_norm_mean);
        }
      }
      if (dw)
        for (int64_t c = 0; c < C; ++c) dw[c] += static_cast<double>(g[c] * ((x[c] - m) * rs));
      if (db)
        for (int64_t c = 0; c < C; ++c) db[c] += static_cast<double>(g[c]);
    }
  }
}

// Rows [r0, r1) of rms_norm's forward; w is never null here (ones stand in).
[[gnu::always_inline]] inline void rms_forward_rows(float* out, float* rstd, const float* inp, const float* w,
                                                    int64_t r0, int64_t r1, int64_t C, double eps) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* x = inp + r * C;  // x (C)
    float* y = out + r * C;        // y (C)
    const float mean_square = mean_of(lane_sum(C, [&](int64_t c) { return x[c] * x[c]; }), C);
    const float rs = static_cast<float>(1.0 / std::sqrt(static_cast<double>(mean_square) + eps));
    for (int64_t c = 0; c < C; ++c) y[c] = x[c] * rs * w[c];
    rstd[r] = rs;
  }
}

// Row blocks [k0, k1) of rms_norm's backward, as backward_blocks: dinp row by row, block k's sum
// of g * norm to dw_blocks when it is not null. w is never null.
[[gnu::always_inline]] inline void rms_backward_blocks(float* dinp, double* dw_blocks, const float* dout,
                                                       const float* inp, const float* w, const float* rstd, int64_t k0,
                                                       int64_t k1, int64_t R, int64_t C) {
  for (int64_t k = k0; k < k1; ++k) {
    double* dw = dw_blocks ? dw_blocks + k * C : nullptr;  // dw (C), this block's sum
    if (dw) std::fill(dw, dw + C, 0.0);
    for (int64_t r = k * kRowBlock; r < std::min(R, (k + 1) * kRowBlock); ++r) {
      const float* g = dout + r * C;  // g (C)
      const float* x = inp + r * C;   // x (C)
      const float rs = rstd[r];
      if (dinp) {
        float* dx = dinp + r * C;  // dx (C)
        const float dnorm_norm_mean = mean_of(lane_sum(C, [&](int64_t c) { return g[c] * w[c] * (x[c] * rs); }), C);
        for (int64_t c = 0; c < C; ++c) dx[c] = rs * (g[c] * w[c] - (x[c] * rs) * dnorm_norm_mean);
      }
      if (dw)
        for (int64_t c = 0; c < C; ++c) dw[c] += static_cast<double>(g[c] * (x[c] * rs));
    }
  }
}

// Row blocks [k0, k1) of column_sums: block k's column sums, in double, to sums (blocks, C).
[[gnu::always_inline]] inline void column_sum_blocks(double* sums, const float* inp, int64_t k0, int64_t k1, int64_t R,
                                                     int64_t C) {
  for (int64_t k = k0; k < k1; ++k) {
    double* s = sums + k * C;  // s (C)
    std::fill(s, s + C, 0.0);
    for (int64_t r = k * kRowBlock; r < std::min(R, (k + 1) * kRowBlock); ++r) {
      const float* x = inp + r * C;  // x (C)
      for (int64_t c = 0; c < C; ++c) s[c] += static_cast<double>(x[c]);
    }
  }
}

int64_t blocks_of(int64_t R) { return (R + kRowBlock - 1) / kRowBlock; }

// A chunk of blocks handed to one thread: kRowBlock rows each, counted as row_grain counts them.
int64_t block_grain(int64_t C) { return std::max<int64_t>(1, row_grain(C) / kRowBlock); }

// out (C) = the sum over blocks of blocks (blocks, C), in block order, rounded once.
void add_blocks(float* out, const std::vector<double>& blocks, int64_t C) {
  const int64_t n = C == 0 ? 0 : static_cast<int64_t>(blocks.size()) / C;
  for (int64_t c = 0; c < C; ++c) {
    double s = 0.0;
    for (int64_t k = 0; k < n; ++k) s += blocks[static_cast<size_t>(k * C + c)];
    out[c] = static_cast<float>(s);
  }
}

// RoPE's blocks p0..p1 of (T, hs), block p = b * H + h: each row's two halves turn together.
// kBackward: the backward's formula (rope.cpp: rope_backward_reference), else the forward's.
template <bool kBackward>
[[gnu::always_inline]] inline void rope_blocks(float* out, const float* x, const float* cos, const float* sin,
                                               RopeShape s, int64_t p0, int64_t p1) {
  const int64_t half = s.hs / 2;
  for (int64_t p = p0; p < p1; ++p) {
    const float* xp = x + (p / s.H) * s.stride_b + (p % s.H) * s.stride_h;  // block p of x
    float* op = out + p * s.T * s.hs;                                        // block p of out
    for (int64_t t = 0; t < s.T; ++t) {
      const float* xr = xp + t * s.stride_t;  // x1 = xr[:half], x2 = xr[half:]
      float* o = op + t * s.hs;
      const float* c = cos + t * s.hs;
      const float* sn = sin + t * s.hs;
      for (int64_t i = 0; i < half; ++i) {
        const float x1 = xr[i], x2 = xr[i + half];
        if constexpr (kBackward) {  // dx1 = g1 c1 + g2 s2,  dx2 = g2 c2 - g1 s1
          const float from_first = x1 * c[i], from_second = x2 * sn[i + half];
          const float back_second = x2 * c[i + half], back_first = -x1 * sn[i];
          o[i] = from_first + from_second;
          o[i + half] = back_second + back_first;
        } else {  // y1 = x1 c1 - x2 s1,  y2 = x2 c2 + x1 s2
          const float first = x1 * c[i], first_turned = -x2 * sn[i];
          const float second = x2 * c[i + half], second_turned = x1 * sn[i + half];
          o[i] = first + first_turned;
          o[i + half] = second + second_turned;
        }
      }
    }
  }
}

template <bool kBackward>
void rope(float* out, const float* x, const float* cos, const float* sin, const RopeShape& s, Isa isa) {
  parallel_for(0, s.B * s.H, row_grain(s.T * s.hs), [&](int64_t p0, int64_t p1) {
    kernels::run_on<rope_blocks<kBackward>>(isa, out, x, cos, sin, s, p0, p1);
  });
}

}  // namespace

void layer_norm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                        int64_t R, int64_t C, double eps, Isa isa) {
  if (R == 0 || C == 0) return;
  const std::vector<float> ones(weight ? 0 : static_cast<size_t>(C), 1.0f);   // (C) for a null weight
  const std::vector<float> zeros(bias ? 0 : static_cast<size_t>(C), 0.0f);   // (C) for a null bias
  const float* w = weight ? weight : ones.data();
  const float* b = bias ? bias : zeros.data();
  parallel_for(0, R, row_grain(C), [&](int64_t r0, int64_t r1) {
    kernels::run_on<forward_rows>(isa, out, mean, rstd, inp, w, b, r0, r1, C, eps);
  });
}

void layer_norm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                         const float* weight, const float* mean, const float* rstd, int64_t R, int64_t C, Isa isa) {
  if (C == 0) return;
  const int64_t blocks = blocks_of(R);
  std::vector<double> dw(dweight ? static_cast<size_t>(blocks * C) : 0);  // dw (blocks, C)
  std::vector<double> db(dbias ? static_cast<size_t>(blocks * C) : 0);    // db (blocks, C)
  const std::vector<float> ones(weight ? 0 : static_cast<size_t>(C), 1.0f);
  const float* w = weight ? weight : ones.data();
  double* pdw = dweight ? dw.data() : nullptr;
  double* pdb = dbias ? db.data() : nullptr;
  parallel_for(0, blocks, block_grain(C), [&](int64_t k0, int64_t k1) {
    kernels::run_on<backward_blocks>(isa, dinp, pdw, pdb, dout, inp, w, mean, rstd, k0, k1, R, C);
  });
  if (dweight) add_blocks(dweight, dw, C);
  if (dbias) add_blocks(dbias, db, C);
}

void rms_norm_forward(float* out, float* rstd, const float* inp, const float* weight, int64_t R, int64_t C, double eps,
                      Isa isa) {
  if (R == 0 || C == 0) return;
  const std::vector<float> ones(weight ? 0 : static_cast<size_t>(C), 1.0f);  // (C) for a null weight
  const float* w = weight ? weight : ones.data();
  parallel_for(0, R, row_grain(C), [&](int64_t r0, int64_t r1) {
    kernels::run_on<rms_forward_rows>(isa, out, rstd, inp, w, r0, r1, C, eps);
  });
}

void rms_norm_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                       const float* rstd, int64_t R, int64_t C, Isa isa) {
  if (C == 0) return;
  const int64_t blocks = blocks_of(R);
  std::vector<double> dw(dweight ? static_cast<size_t>(blocks * C) : 0);  // dw (blocks, C)
  const std::vector<float> ones(weight ? 0 : static_cast<size_t>(C), 1.0f);
  const float* w = weight ? weight : ones.data();
  double* pdw = dweight ? dw.data() : nullptr;
  parallel_for(0, blocks, block_grain(C), [&](int64_t k0, int64_t k1) {
    kernels::run_on<rms_backward_blocks>(isa, dinp, pdw, dout, inp, w, rstd, k0, k1, R, C);
  });
  if (dweight) add_blocks(dweight, dw, C);
}

void column_sums(float* out, const float* inp, int64_t R, int64_t C, Isa isa) {
  if (C == 0) return;
  const int64_t blocks = blocks_of(R);
  std::vector<double> sums(static_cast<size_t>(blocks * C));  // sums (blocks, C)
  parallel_for(0, blocks, block_grain(C), [&](int64_t k0, int64_t k1) {
    kernels::run_on<column_sum_blocks>(isa, sums.data(), inp, k0, k1, R, C);
  });
  add_blocks(out, sums, C);
}

void rope_forward(float* out, const float* x, const float* cos, const float* sin, const RopeShape& shape, Isa isa) {
  rope<false>(out, x, cos, sin, shape, isa);
}

void rope_backward(float* out, const float* dy, const float* cos, const float* sin, const RopeShape& shape, Isa isa) {
  rope<true>(out, dy, cos, sin, shape, isa);
}

}  // namespace tg::row_kernels
