// autograd/gradcheck.h — does an op's backward agree with its forward? (as torch.autograd.gradcheck)
//
//   GradcheckResult r = gradcheck([](const std::vector<Tensor>& x) { return mul(x[0], x[1]); },
//                                 {a, b});
//   EXPECT_TRUE(r.passed) << r;        // or: assert_gradcheck(fn, {a, b});
//
// For every input x of y = fn(x_0, ..., x_k) that requires grad, the Jacobian d y_i / d x_j from
// central finite differences in float64 is compared with the one the tape gives; an element fails
// when |analytical - numerical| > atol + rtol * |numerical|. Read gradcheck() first: its comment
// says how each Jacobian is made, what `captured` tensors, random ops and fuzzing do.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.h"

namespace tg {

using GradcheckFn = std::function<Tensor(const std::vector<Tensor>&)>;

struct GradcheckOptions {
  double eps = 1e-6;   // finite-difference step
  double atol = 1e-5;  // tolerance: |a - n| <= atol + rtol * |n|   (PyTorch's defaults)
  double rtol = 1e-3;
  int fuzz = 0;               // extra runs on random shapes and layouts (0 = only the given inputs)
  uint32_t fuzz_seed = 1;     // run r uses std::mt19937(fuzz_seed + r); see gradcheck()
  bool fuzz_shapes = true;    // vary the shapes of floating inputs (broadcastable ones)
  bool fuzz_layouts = true;   // vary the strides of floating inputs (transposed, sliced)
  int worst_shown = 5;        // worst elements kept per input
  int64_t full_jacobian_up_to = 64;  // print Jacobians in full up to this many entries
};

// One Jacobian entry: d output[output_index] / d input[input_index] (flat, row-major).
struct JacobianEntry {
  int64_t input_index = 0;
  int64_t output_index = 0;
  double numerical = 0;
  double analytical = 0;
  double abs_error = 0;  // |analytical - numerical|
  double rel_error = 0;  // abs_error / |numerical| (inf when numerical is 0 and they differ)
  double excess = 0;     // abs_error / (atol + rtol * |numerical|): above 1 fails
};

// The check of one input that requires grad (or one captured tensor), in one run.
struct InputCheck {
  size_t input = 0;  // position in the input list; captured tensors follow the inputs
  std::string name;  // "input 0", or the captured tensor's name ("W_query.weight")
  bool captured = false;
  Shape shape;
  Shape strides;
  int64_t storage_offset = 0;
  bool converted_from_float32 = false;
  bool passed = true;
  std::string problem;                // a failure that is not a number: "gradient has shape ..."
  std::vector<JacobianEntry> worst;   // the worst elements, worst (largest excess) first
  double max_abs_error = 0;  // over all elements
  double max_rel_error = 0;  // over elements with |numerical| > atol (smaller ones are judged by atol)
  // Both Jacobians, row-major (rows: input elements, columns: output elements); kept only
  // when they have at most options.full_jacobian_up_to entries.
  std::vector<double> numerical;
  std::vector<double> analytical;
  int64_t rows = 0, cols = 0;
};

// One check of fn on one set of inputs (the given ones, or a fuzz variation).
struct GradcheckRun {
  std::string what;        // "given inputs" or "fuzz run 3 (run seed 4): ..."
  bool fuzzed = false;
  uint32_t run_seed = 0;   // for fuzz runs: replay with fuzz = 1, fuzz_seed = run_seed
  bool skipped = false;    // fn threw on this variation; `skip_reason` says what
  std::string skip_reason;
  Shape output_shape;
  bool passed = true;
  std::vector<InputCheck> inputs;
};

struct GradcheckResult {
  bool passed = true;
  GradcheckOptions options;
  std::vector<GradcheckRun> runs;  // runs[0]: the given inputs; then the fuzz runs
  JacobianEntry worst;             // the largest excess over all runs and inputs
  size_t worst_run = 0, worst_input = 0;
  bool has_worst = false;
  double max_abs_error = 0;  // the largest of the inputs' max_abs_error / max_rel_error, over all runs
  double max_rel_error = 0;

  explicit operator bool() const { return passed; }
  // A readable account: on failure, which run and input, the worst elements and the
  // Jacobians (in full when small); on success, the worst error seen.
  std::string report() const;
};
std::ostream& operator<<(std::ostream& os, const GradcheckResult& result);

// Compare analytical and numerical Jacobians of fn at `inputs`.
//
// For a function y = fn(x_0, ..., x_k) and every input x that requires grad, two Jacobians
// J[j][i] = d y_i / d x_j (row j: input element j, column i: output element i, both flat in
// row-major order of the logical shape) are compared:
//
//   numerical   central finite differences in float64:
//                 J[j][i] = (fn(x + eps e_j)_i - fn(x - eps e_j)_i) / (2 eps)
//               x is perturbed in place, through the input's own strides and offset, so a
//               transposed or sliced input is checked as the view it is.
//   analytical  from the tape: one backward per output element i with the one-hot gradient
//               e_i (retain_graph between them); row j of column i is x.grad()[j].
//
// An element fails when |analytical - numerical| > atol + rtol * |numerical|.
//
// Inputs should be float64 (finite differences in float32 are useless at eps = 1e-6). Float32
// inputs are checked as float64 copies with the same strides; the report says so.
//
// Tensors fn reads without taking them as arguments (a module's parameters) can be checked
// too: pass them as `captured`, by name. They must be float64 leaves that require grad; they
// are perturbed in place (and restored bit for bit), their .grad is used and then cleared.
// The fuzzer varies the inputs only; captured tensors keep their shape and layout.
// tg::nn::gradcheck (nn/gradcheck.h) checks a whole module this way.
//
// Random numbers: every evaluation of fn starts from the default generator's state at the
// call, so random ops inside fn (dropout in training) draw the same numbers each time and
// every perturbed evaluation sees the same mask; afterwards the generator is back at that
// state, as if gradcheck had not run.
//
// Fuzzing (options.fuzz = N) reruns the check N more times on random variations of the inputs:
// floating inputs get broadcastable shapes (some dims shrunk to 1, leading dims dropped; a
// variation fn rejects with a tg::Error, or where fn's output is not finite though it is on the
// given inputs -- the op is undefined there, as unbiased var over one element -- is replaced by
// the original shapes, and the run's description says so) and strided
// layouts (transposed storage, slices with a step, a storage offset). Run r uses a
// std::mt19937 seeded with fuzz_seed + r. To replay a failing run alone, take the run seed
// from the report and check again with
//     options.fuzz = 1; options.fuzz_seed = <run seed>;
// or, without recompiling, set the environment variable TG_GRADCHECK_SEED=<run seed> (it
// replaces options.fuzz_seed whenever options.fuzz > 0).
//
// Throws tg::Error if no input requires grad, if an input requiring grad has overlapping
// memory (stride 0, as after expand), or if fn's output is not floating point.
GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          GradcheckOptions options = {});

// The same, also with respect to tensors fn reads on its own (`captured`, above). Throws
// tg::Error if a captured tensor is not a float64 leaf that requires grad, or if nothing at
// all (input or captured) requires grad.
using NamedTensorList = std::vector<std::pair<std::string, Tensor>>;
GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, const NamedTensorList& captured,
                          GradcheckOptions options = {});

// For tests: run gradcheck and throw a tg::Error whose message is the report if it fails.
void assert_gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, GradcheckOptions options = {});

}  // namespace tg
