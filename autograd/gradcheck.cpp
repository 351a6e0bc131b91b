// autograd/gradcheck.cpp — analytical (tape) vs numerical (finite differences) Jacobians.
//
//   numerical   J[j][i] = (fn(x + eps e_j)_i - fn(x - eps e_j)_i) / (2 eps)     in float64
//   analytical  J[j][i] = (d/dx fn(x) backpropagated from the one-hot e_i)_j
//   fails when  |analytical - numerical| > atol + rtol * |numerical|
//
// See gradcheck.h for the options, the fuzzer and how to replay one of its runs.
#include "autograd/gradcheck.h"

#include "autograd/internal.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <optional>
#include <ostream>
#include <random>
#include <sstream>

#include "autograd/random/generator.h"
#include "autograd/runtime/environment.h"
#include "autograd/ops.h"
#include "autograd/tape.h"

namespace tg {

namespace {

// --- geometry ----------------------------------------------------------------------------------

// Storage offsets (in elements) of t's elements, in row-major order of its logical shape.
std::vector<int64_t> logical_offsets(const Tensor& t) {
  std::vector<int64_t> offsets;
  offsets.reserve(static_cast<size_t>(t.numel()));
  if (t.numel() == 0) return offsets;
  const Shape& sizes = t.sizes();
  const Shape& strides = t.strides();
  Shape index(sizes.size(), 0);
  for (int64_t n = 0; n < t.numel(); ++n) {
    int64_t off = t.storage_offset();
    for (size_t d = 0; d < sizes.size(); ++d) off += index[d] * strides[d];
    offsets.push_back(off);
    for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {  // odometer
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
    }
  }
  return offsets;
}

// "(1,2)": the multi-index of a flat row-major position in `shape`.
std::string index_str(int64_t flat, const Shape& shape) {
  Shape index(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    const int64_t n = std::max<int64_t>(shape[d], 1);
    index[d] = flat % n;
    flat /= n;
  }
  return shape_str(index);
}

// A stride-0 dim of size > 1 (as after expand): one memory element is several tensor elements,
// so perturbing it would move them all at once.
void check_no_overlap(const Tensor& t, size_t position) {
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.sizes()[d] > 1 && t.strides()[d] == 0) {
      throw Error("gradcheck: input " + std::to_string(position) + " (shape " + shape_str(t.sizes()) +
                  ", strides " + shape_str(t.strides()) + ") has overlapping memory: stride 0 along dim " +
                  std::to_string(d) + " of size " + std::to_string(t.sizes()[d]) +
                  " (from expand?); pass .contiguous() of it, or expand inside fn");
    }
  }
}

// A copy of src converted to `dtype`, with the same sizes, strides and storage offset (a
// fresh storage just large enough), so a transposed or sliced input stays one.
Tensor copy_with_layout(const Tensor& src, ScalarType dtype) {
  int64_t extent = src.storage_offset() + 1;
  for (int64_t d = 0; d < src.dim(); ++d) extent += (src.sizes()[d] - 1) * src.strides()[d];
  if (src.numel() == 0) extent = 1;
  Tensor buffer = make_empty({extent}, dtype);
  Tensor out = make_view(buffer, src.sizes(), src.strides(), src.storage_offset());
  impl_of(out).is_view = impl_of(src).is_view;
  copy_values(out, src, "gradcheck");
  return out;
}

// --- evaluating fn ------------------------------------------------------------------------------

// fn with its arguments bound: what one evaluation computes.
using Evaluation = std::function<Tensor()>;

// fn's output values (row-major, as double) with nothing recorded.
std::vector<double> evaluate(const Evaluation& fn, Shape* shape = nullptr) {
  NoGradGuard no_grad;
  Tensor out = fn();
  if (!out.defined() || !out.is_floating_point()) {
    throw Error(std::string("gradcheck: fn must return a floating point tensor, got ") +
                (out.defined() ? dtype_name(out.dtype()) : "an undefined tensor"));
  }
  if (shape) *shape = out.sizes();
  return out.tolist<double>();
}

// Numerical Jacobian of fn with respect to x (which fn reads), row-major (rows: x's elements).
std::vector<double> numerical_jacobian(const Evaluation& fn, const Tensor& x, int64_t cols, double eps) {
  double* memory = static_cast<double*>(storage_of(x).data);
  const std::vector<int64_t> offsets = logical_offsets(x);
  std::vector<double> jacobian(offsets.size() * static_cast<size_t>(cols));
  for (size_t j = 0; j < offsets.size(); ++j) {
    const double original = memory[offsets[j]];
    memory[offsets[j]] = original + eps;
    const std::vector<double> plus = evaluate(fn);
    memory[offsets[j]] = original - eps;
    const std::vector<double> minus = evaluate(fn);
    memory[offsets[j]] = original;  // restored bit for bit
    for (int64_t i = 0; i < cols; ++i) {
      jacobian[j * cols + i] = (plus[i] - minus[i]) / (2 * eps);
    }
  }
  return jacobian;
}

// Analytical Jacobians from the tape, one per tensor in `checked`: one backward per output
// element with a one-hot gradient. Shape or dtype problems of a gradient go to problems[c].
std::vector<std::vector<double>> analytical_jacobians(const Evaluation& fn, const std::vector<Tensor>& checked,
                                                      std::vector<std::string>& problems) {
  std::vector<std::vector<double>> jacobians(checked.size());
  for (const Tensor& x : checked) x.zero_grad();
  Tensor out = fn();
  const int64_t cols = out.numel();
  for (size_t c = 0; c < checked.size(); ++c) {
    jacobians[c].assign(static_cast<size_t>(checked[c].numel() * cols), 0.0);
  }
  if (!out.requires_grad()) {
    for (auto& p : problems) p = "fn's output does not require grad (no tape entry led to it)";
    return jacobians;
  }
  for (int64_t i = 0; i < cols; ++i) {
    std::vector<double> one_hot(static_cast<size_t>(cols), 0.0);
    one_hot[i] = 1.0;
    for (const Tensor& x : checked) x.zero_grad();
    out.backward(from_vector(one_hot, out.sizes(), out.dtype()), /*retain_graph=*/i + 1 < cols);
    for (size_t c = 0; c < checked.size(); ++c) {
      const Tensor& x = checked[c];
      const Tensor g = x.grad();
      if (!g.defined()) continue;  // no path from this tensor to output i: a zero column
      if (g.sizes() != x.sizes()) {
        problems[c] = "gradient has shape " + shape_str(g.sizes()) + " but the input has shape " + shape_str(x.sizes());
        continue;
      }
      if (g.dtype() != x.dtype()) {
        problems[c] = std::string("gradient has dtype ") + dtype_name(g.dtype()) + " but the input has dtype " +
                      dtype_name(x.dtype());
      }
      const std::vector<double> values = g.tolist<double>();
      for (size_t j = 0; j < values.size(); ++j) jacobians[c][j * cols + i] = values[j];
    }
  }
  for (const Tensor& x : checked) x.zero_grad();
  return jacobians;
}

// Saves the default generator on construction and puts it back on replay() and on
// destruction: every evaluation of fn draws the same random numbers (the same dropout mask).
class GeneratorReplay {
 public:
  GeneratorReplay() : start_(default_generator()) {}
  ~GeneratorReplay() { replay(); }
  GeneratorReplay(const GeneratorReplay&) = delete;
  GeneratorReplay& operator=(const GeneratorReplay&) = delete;
  void replay() const { default_generator() = start_; }

 private:
  Generator start_;
};

// --- comparing ----------------------------------------------------------------------------------

JacobianEntry compare_entry(int64_t j, int64_t i, double numerical, double analytical, const GradcheckOptions& o) {
  JacobianEntry e;
  e.input_index = j;
  e.output_index = i;
  e.numerical = numerical;
  e.analytical = analytical;
  e.abs_error = std::abs(analytical - numerical);
  if (std::isnan(numerical) && std::isnan(analytical)) e.abs_error = 0;  // both undefined: agree
  if (std::isnan(e.abs_error)) e.abs_error = INFINITY;                    // one NaN: never agrees
  e.rel_error = numerical != 0 ? e.abs_error / std::abs(numerical) : (e.abs_error == 0 ? 0.0 : INFINITY);
  const double tolerance = o.atol + o.rtol * std::abs(numerical);
  e.excess = e.abs_error == 0 ? 0.0 : e.abs_error / tolerance;  // agreeing NaNs have a NaN tolerance
  return e;
}

InputCheck compare_jacobians(const Tensor& x, size_t position, const std::string& name, bool converted,
                             const std::vector<double>& numerical, const std::vector<double>& analytical, int64_t cols,
                             const std::string& problem, const GradcheckOptions& o) {
  InputCheck check;
  check.input = position;
  check.name = name;
  check.shape = x.sizes();
  check.strides = x.strides();
  check.storage_offset = x.storage_offset();
  check.converted_from_float32 = converted;
  check.problem = problem;
  check.rows = x.numel();
  check.cols = cols;
  std::vector<JacobianEntry> entries;
  for (int64_t j = 0; j < check.rows; ++j) {
    for (int64_t i = 0; i < cols; ++i) {
      const JacobianEntry& e = entries.emplace_back(compare_entry(j, i, numerical[j * cols + i], analytical[j * cols + i], o));
      check.max_abs_error = std::max(check.max_abs_error, e.abs_error);
      if (std::abs(e.numerical) > o.atol) check.max_rel_error = std::max(check.max_rel_error, e.rel_error);
    }
  }
  check.passed = problem.empty() &&
                 std::all_of(entries.begin(), entries.end(), [](const JacobianEntry& e) { return e.excess <= 1.0; });
  const size_t shown = std::min<size_t>(entries.size(), static_cast<size_t>(std::max(o.worst_shown, 1)));
  std::partial_sort(entries.begin(), entries.begin() + static_cast<int64_t>(shown), entries.end(),
                    [](const JacobianEntry& a, const JacobianEntry& b) { return a.excess > b.excess; });
  check.worst.assign(entries.begin(), entries.begin() + static_cast<int64_t>(shown));
  if (check.rows * cols <= o.full_jacobian_up_to) {
    check.numerical = numerical;
    check.analytical = analytical;
  }
  return check;
}

// --- one run --------------------------------------------------------------------------------------

// The inputs as gradcheck works on them: floating ones as float64 copies with the same
// layout (so perturbing never touches the caller's tensors), requiring grad as the originals.
std::vector<Tensor> working_copies(const std::vector<Tensor>& inputs, std::vector<bool>& converted) {
  std::vector<Tensor> work;
  converted.assign(inputs.size(), false);
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& x = inputs[k];
    if (!x.defined() || !x.is_floating_point()) {
      work.push_back(x);
      continue;
    }
    if (x.requires_grad()) check_no_overlap(x, k);
    converted[k] = x.dtype() == kFloat32;
    Tensor copy = copy_with_layout(x, kFloat64);
    if (x.requires_grad()) copy.requires_grad_(true);
    work.push_back(copy);
  }
  return work;
}

// A captured tensor is perturbed where it lives: it must be a float64 leaf that requires grad.
void check_captured(const NamedTensorList& captured) {
  for (const auto& [name, t] : captured) {
    const std::string what = "gradcheck: captured tensor '" + name + "'";
    if (!t.defined()) throw Error(what + " is undefined");
    if (t.dtype() != kFloat64 || !t.requires_grad() || !t.is_leaf()) {
      throw Error(what + " must be a float64 leaf that requires grad, got a " + dtype_name(t.dtype()) +
                  (t.is_leaf() ? " leaf" : " non-leaf") + (t.requires_grad() ? "" : " that does not require grad"));
    }
  }
}

// Every tensor of one run that is checked: the working copies of inputs that require grad, then
// the captured tensors; both Jacobians of fn with respect to each, compared.
GradcheckRun check_once(const GradcheckFn& fn, const std::vector<Tensor>& inputs, const NamedTensorList& captured,
                        const GradcheckOptions& o) {
  GradcheckRun run;
  std::vector<bool> converted;
  const std::vector<Tensor> work = working_copies(inputs, converted);
  std::vector<Tensor> checked;
  std::vector<size_t> positions;
  std::vector<std::string> names;
  for (size_t k = 0; k < work.size(); ++k) {
    if (!work[k].defined() || !work[k].requires_grad()) continue;
    checked.push_back(work[k]);
    positions.push_back(k);
    names.push_back("input " + std::to_string(k));
  }
  for (size_t c = 0; c < captured.size(); ++c) {
    checked.push_back(captured[c].second);
    positions.push_back(work.size() + c);
    names.push_back(captured[c].first);
    converted.push_back(false);
  }
  if (checked.empty()) throw Error("gradcheck: no input requires grad; call requires_grad_() on the inputs to check");

  const GeneratorReplay generator;
  const Evaluation evaluation = [&] {
    generator.replay();
    return fn(work);
  };
  const int64_t cols = static_cast<int64_t>(evaluate(evaluation, &run.output_shape).size());
  std::vector<std::vector<double>> numerical;
  for (const Tensor& x : checked) numerical.push_back(numerical_jacobian(evaluation, x, cols, o.eps));
  std::vector<std::string> problems(checked.size());
  std::vector<std::vector<double>> analytical;
  try {
    analytical = analytical_jacobians(evaluation, checked, problems);
  } catch (const std::exception& e) {
    analytical.clear();
    for (size_t c = 0; c < checked.size(); ++c) {
      analytical.emplace_back(numerical[c].size(), NAN);
      problems[c] = std::string("backward threw: ") + e.what();
    }
  }
  for (size_t c = 0; c < checked.size(); ++c) {
    const size_t k = positions[c];
    run.inputs.push_back(compare_jacobians(checked[c], k, names[c], converted[k], numerical[c], analytical[c], cols,
                                           problems[c], o));
    run.inputs.back().captured = k >= work.size();
    run.passed = run.passed && run.inputs.back().passed;
  }
  return run;
}

// --- the fuzzer --------------------------------------------------------------------------------------

// A number in [0, n) from one draw of rng: the same on every standard library, so a run seed
// replays the same run anywhere (std's distributions are not specified to the bit, and libc++'s
// and libstdc++'s differ). n is small here, so the modulo's bias is negligible.
int64_t draw_below(std::mt19937& rng, int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint32_t>(n)); }

// A broadcastable variation of x's shape: each dim shrunk to 1 with probability 1/3 (keeping
// its first slice, so the values stay in x's domain), then sometimes the leading size-1 dims
// dropped.
Tensor vary_shape(const Tensor& x, std::mt19937& rng) {
  Tensor y = x.detach();
  for (int64_t d = 0; d < y.dim(); ++d) {
    if (y.sizes()[d] > 1 && draw_below(rng, 3) == 0) y = y.narrow(d, 0, 1);
  }
  if (draw_below(rng, 4) == 0) {
    while (y.dim() > 0 && y.sizes()[0] == 1) y = y.squeeze(0);
  }
  return y;
}

// x's values in a freshly laid out storage: contiguous, with a storage offset, transposed
// (two dims swapped in memory) or sliced (every other element along a dim).
Tensor vary_layout(const Tensor& x, std::mt19937& rng, std::string& layout) {
  const int64_t kind = draw_below(rng, 4);
  Tensor view;
  if (kind == 2 && x.dim() >= 2) {
    const int64_t a = draw_below(rng, x.dim());
    int64_t b = draw_below(rng, x.dim());
    if (a == b) b = (a + 1) % x.dim();
    Shape swapped = x.sizes();
    std::swap(swapped[a], swapped[b]);
    view = make_empty(swapped, x.dtype()).transpose(a, b).detach();
    layout = "transposed(" + std::to_string(a) + "," + std::to_string(b) + ")";
  } else if (kind == 3 && x.dim() >= 1) {
    const int64_t d = draw_below(rng, x.dim());
    Shape wider = x.sizes();
    wider[d] = 2 * wider[d] + 1;
    view = make_empty(wider, x.dtype()).slice(d, 1, std::nullopt, 2).detach();
    layout = "sliced(dim " + std::to_string(d) + ", 1::2)";
  } else if (kind == 1) {
    Tensor buffer = make_empty({x.numel() + 3}, x.dtype());
    view = make_view(buffer, x.sizes(), contiguous_strides(x.sizes()), 3);
    layout = "offset 3";
  } else {
    view = make_empty(x.sizes(), x.dtype());
    layout = "contiguous";
  }
  copy_values(view, x, "gradcheck");
  return view;
}

// One random variation of the floating inputs (shapes if `shapes`, layouts if `layouts`).
std::vector<Tensor> vary_inputs(const std::vector<Tensor>& inputs, std::mt19937& rng, bool shapes, bool layouts,
                                std::string& description) {
  NoGradGuard no_grad;
  std::vector<Tensor> varied;
  std::ostringstream os;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& x = inputs[k];
    if (!x.defined() || !x.is_floating_point()) {
      varied.push_back(x);
      continue;
    }
    Tensor y = shapes ? vary_shape(x, rng) : x.detach();
    std::string layout = "contiguous";
    y = layouts ? vary_layout(y, rng, layout) : y.clone();
    if (x.requires_grad()) y.requires_grad_(true);
    os << (os.tellp() > 0 ? "; " : "") << "input " << k << " " << shape_str(y.sizes()) << " " << layout;
    varied.push_back(y);
  }
  description = os.str();
  return varied;
}

bool all_finite(const std::vector<double>& values) {
  return std::all_of(values.begin(), values.end(), [](double v) { return std::isfinite(v); });
}

// Whether fn can be checked on a variation: it must not throw, and when fn's output on the given
// inputs is finite, its output on the variation must be too. A shrunk dim can take an op out of
// its domain (unbiased var over one element is 0/0): that is not a wrong gradient, so such a
// variation is never checked. `error` says why a variation was refused.
bool fn_accepts(const GradcheckFn& fn, const std::vector<Tensor>& inputs, bool given_output_finite,
                std::string& error) {
  try {
    const std::vector<double> out = evaluate([&] { return fn(inputs); });
    if (given_output_finite && !all_finite(out)) {
      error = "fn's output is not finite on this variation, though it is on the given inputs (the op is "
              "undefined at these shapes, e.g. unbiased var over one element)";
      return false;
    }
    return true;
  } catch (const std::exception& e) {
    error = e.what();
    return false;
  }
}

GradcheckRun fuzz_run(const GradcheckFn& fn, const std::vector<Tensor>& inputs, const NamedTensorList& captured,
                      uint32_t run_seed, const GradcheckOptions& o) {
  std::mt19937 rng(run_seed);
  std::string description, error;
  bool given_output_finite = false;
  try {
    given_output_finite = all_finite(evaluate([&] { return fn(inputs); }));
  } catch (const std::exception&) {
    // the given inputs were checked first; a throw here shows again below
  }
  std::vector<Tensor> varied = vary_inputs(inputs, rng, o.fuzz_shapes, o.fuzz_layouts, description);
  std::string shapes_note;
  if (o.fuzz_shapes && !fn_accepts(fn, varied, given_output_finite, error)) {
    // fn rejected the shapes (a matmul of (3,1) and (4,2), say) or is undefined there: keep the
    // given shapes, and say so in the run's description.
    shapes_note = " (the shape variation " + description + " was not used: " + error + ")";
    varied = vary_inputs(inputs, rng, false, o.fuzz_layouts, description);
  }
  GradcheckRun run;
  if (!fn_accepts(fn, varied, given_output_finite, error)) {
    run.skipped = true;
    run.skip_reason = error;
  } else {
    run = check_once(fn, varied, captured, o);
  }
  run.fuzzed = true;
  run.run_seed = run_seed;
  run.what = "fuzz run with run seed " + std::to_string(run_seed) + ": " + description + shapes_note;
  return run;
}

uint32_t fuzz_seed_from(const GradcheckOptions& o) {
  const std::optional<uint64_t> seed = environment_number("TG_GRADCHECK_SEED", UINT32_MAX);
  return seed ? static_cast<uint32_t>(*seed) : o.fuzz_seed;
}

// --- the report -------------------------------------------------------------------------------------

std::string num(double v) {
  std::ostringstream os;
  os << std::setprecision(6) << std::scientific << v;
  return os.str();
}

void write_matrix(std::ostream& os, const std::vector<double>& m, int64_t rows, int64_t cols) {
  for (int64_t j = 0; j < rows; ++j) {
    os << "      ";
    for (int64_t i = 0; i < cols; ++i) os << std::setw(14) << num(m[j * cols + i]);
    os << "\n";
  }
}

void write_entry(std::ostream& os, const JacobianEntry& e, const InputCheck& check, const Shape& out_shape) {
  os << "      " << (check.captured ? check.name : std::string("input")) << "[" << e.input_index << "] " << index_str(e.input_index, check.shape) << " -> output["
     << e.output_index << "] " << index_str(e.output_index, out_shape) << ": numerical " << num(e.numerical)
     << "  analytical " << num(e.analytical) << "  abs err " << num(e.abs_error) << "  rel err "
     << num(e.rel_error) << (e.excess > 1 ? "  OUT OF TOLERANCE" : "") << "\n";
}

void write_input(std::ostream& os, const InputCheck& check, const Shape& out_shape, bool verbose) {
  os << "  " << check.name << ": shape " << shape_str(check.shape) << " strides " << shape_str(check.strides)
     << " offset " << check.storage_offset << (check.converted_from_float32 ? ", float32 checked as a float64 copy" : "")
     << (check.passed ? "  ok" : "  FAILED") << "\n";
  if (!check.problem.empty()) os << "    problem: " << check.problem << "\n";
  if (!verbose) return;
  os << "    worst elements (flat index and multi-index; most out of tolerance first):\n";
  for (const JacobianEntry& e : check.worst) write_entry(os, e, check, out_shape);
  if (!check.numerical.empty()) {
    os << "    numerical Jacobian (" << check.rows << " x " << check.cols
       << "; row = input element, column = output element):\n";
    write_matrix(os, check.numerical, check.rows, check.cols);
    os << "    analytical Jacobian:\n";
    write_matrix(os, check.analytical, check.rows, check.cols);
  } else {
    os << "    (Jacobians have " << check.rows * check.cols << " entries; only the worst are shown)\n";
  }
}

}  // namespace

GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, GradcheckOptions options) {
  return gradcheck(fn, inputs, {}, options);
}

GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, const NamedTensorList& captured,
                          GradcheckOptions options) {
  check_captured(captured);
  const GeneratorReplay generator;  // the fuzzer's own evaluations draw too: all undone at the end
  GradcheckResult result;
  result.options = options;
  result.runs.push_back(check_once(fn, inputs, captured, options));
  result.runs[0].what = "given inputs";
  if (options.fuzz > 0) {
    const uint32_t seed = fuzz_seed_from(options);
    result.options.fuzz_seed = seed;
    for (int r = 0; r < options.fuzz; ++r) {
      result.runs.push_back(fuzz_run(fn, inputs, captured, seed + static_cast<uint32_t>(r), options));
    }
  }
  for (size_t r = 0; r < result.runs.size(); ++r) {
    const GradcheckRun& run = result.runs[r];
    result.passed = result.passed && run.passed;
    for (size_t c = 0; c < run.inputs.size(); ++c) {
      const InputCheck& check = run.inputs[c];
      result.max_abs_error = std::max(result.max_abs_error, check.max_abs_error);
      result.max_rel_error = std::max(result.max_rel_error, check.max_rel_error);
      if (check.worst.empty()) continue;
      if (!result.has_worst || check.worst[0].excess > result.worst.excess) {
        result.worst = check.worst[0];
        result.worst_run = r;
        result.worst_input = c;
        result.has_worst = true;
      }
    }
  }
  return result;
}

std::string GradcheckResult::report() const {
  std::ostringstream os;
  size_t failed = 0, skipped = 0;
  for (const GradcheckRun& run : runs) {
    failed += run.passed ? 0 : 1;
    skipped += run.skipped ? 1 : 0;
  }
  os << "gradcheck " << (passed ? "passed" : "FAILED") << ": " << runs.size() << " run(s)";
  if (runs.size() > 1) os << " (given inputs + " << runs.size() - 1 << " fuzz, fuzz_seed " << options.fuzz_seed << ")";
  if (!passed) os << ", " << failed << " failed";
  if (skipped) os << ", " << skipped << " skipped (fn rejected the variation)";
  os << "\n  tolerance |analytical - numerical| <= atol + rtol * |numerical| with atol " << options.atol << ", rtol "
     << options.rtol << "; central differences with eps " << options.eps << "\n";
  std::string converted;
  for (const InputCheck& check : runs.empty() ? std::vector<InputCheck>{} : runs[0].inputs)
    if (check.converted_from_float32) converted += (converted.empty() ? "" : ", ") + std::to_string(check.input);
  if (!converted.empty()) os << "  note: float32 input(s) " << converted << " were checked as float64 copies\n";
  if (has_worst) {
    os << "  largest abs error " << num(max_abs_error) << ", largest rel error " << num(max_rel_error)
       << " (rel: where |numerical| > atol)\n";
    const GradcheckRun& run = runs[worst_run];
    const InputCheck& check = run.inputs[worst_input];
    os << "  worst element (" << run.what << ", " << check.name << "):\n";
    write_entry(os, worst, check, run.output_shape);
  }
  for (const GradcheckRun& run : runs) {
    if (run.passed && !run.skipped) continue;
    os << "run: " << run.what << "\n";
    if (run.skipped) {
      os << "  skipped: fn threw on this variation: " << run.skip_reason << "\n";
      continue;
    }
    os << "  output shape " << shape_str(run.output_shape) << "\n";
    for (const InputCheck& check : run.inputs) write_input(os, check, run.output_shape, !check.passed);
    if (run.fuzzed) {
      os << "  replay this run alone: options.fuzz = 1; options.fuzz_seed = " << run.run_seed
         << ";  (or run with TG_GRADCHECK_SEED=" << run.run_seed << " and options.fuzz = 1)\n";
    }
  }
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const GradcheckResult& result) { return os << result.report(); }

void assert_gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, GradcheckOptions options) {
  const GradcheckResult result = gradcheck(fn, inputs, options);
  if (!result.passed) throw Error(result.report());
}

}  // namespace tg
