// tests/autograd/test_ops_vs_torch.cpp — every op's forward value and input gradients against
// PyTorch 1.13, from tests/reference/ops_torch.json (made by make_op_reference.py; see its
// header for the format).
//
// One test per case id: OpsVsTorch.Matches/<case id>. Each case builds its inputs exactly as
// torch had them (values, dtype, and the same transposed or sliced layout), runs the op through
// the dispatch table below, backpropagates torch's upstream gradient, and compares output and
// gradients element by element with |got - torch| <= atol + rtol * |torch|.
//
// After the suite, an op coverage table (cases, max forward and gradient error vs torch) is
// printed and written to op_coverage_vs_torch.md next to the test binary.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "io/json.h"
#include "autograd/ops.h"
#include "autograd/tape.h"

namespace tg {
namespace {

const char* const kReferencePath = TG_REFERENCE_DIR "/ops_torch.json";

const json::Value& reference() {
  static const json::Value doc = json::parse_file(kReferencePath);
  return doc;
}

// --- reading tensors and arguments ---------------------------------------------------------------------

ScalarType dtype_from_name(const std::string& name) {
  if (name == "float32") return kFloat32;
  if (name == "float64") return kFloat64;
  if (name == "int64") return kInt64;
  if (name == "bool") return kBool;
  throw Error("ops_torch.json: unknown dtype '" + name + "'");
}

Shape shape_of(const json::Value& list) {
  Shape shape;
  for (const json::Value& v : list.as_array()) shape.push_back(v.as_int64());
  return shape;
}

// "bff0000000000000" -> -1.0: the 16 hex digits of a float64 bit pattern.
double double_from_hex(const std::string& hex) {
  return std::bit_cast<double>(static_cast<uint64_t>(std::stoull(hex, nullptr, 16)));
}

// The row-major values of a stored tensor, as double.
std::vector<double> values_of(const json::Value& t) {
  std::vector<double> values;
  const bool floating = is_floating(dtype_from_name(t["dtype"].as_string()));
  for (const json::Value& v : t["values"].as_array()) {
    values.push_back(floating ? double_from_hex(v.as_string()) : static_cast<double>(v.as_int64()));
  }
  return values;
}

Tensor decode_tensor(const json::Value& t) {
  const ScalarType dtype = dtype_from_name(t["dtype"].as_string());
  const Shape shape = shape_of(t["shape"]);
  if (is_floating(dtype)) return from_vector(values_of(t), shape, dtype);
  std::vector<int64_t> ints;
  for (const json::Value& v : t["values"].as_array()) ints.push_back(v.as_int64());
  return from_vector(ints, shape, dtype);
}

// The values of `logical` laid out as torch had them: "transposed" (the contiguous transpose
// of the last two dims, viewed back) or "sliced" (every other element of a buffer twice as
// wide in the last dim).
Tensor with_layout(const Tensor& logical, const std::string& layout) {
  if (layout == "contiguous") return logical;
  Shape storage_shape = logical.sizes();
  Tensor view;
  if (layout == "transposed") {
    std::swap(storage_shape[storage_shape.size() - 1], storage_shape[storage_shape.size() - 2]);
    view = empty(storage_shape, logical.dtype()).transpose(-1, -2);
  } else if (layout == "sliced") {
    storage_shape.back() *= 2;
    view = zeros(storage_shape, logical.dtype()).slice(-1, 0, std::nullopt, 2);
  } else {
    throw Error("ops_torch.json: unknown layout '" + layout + "'");
  }
  view.copy_(logical);
  return view;
}

Tensor make_input(const json::Value& spec) {
  Tensor x = with_layout(decode_tensor(spec), spec["layout"].as_string());
  const Shape torch_strides = shape_of(spec["strides"]);
  if (x.numel() > 1 && x.strides() != torch_strides) {
    throw Error(spec.where() + ": rebuilt strides " + shape_str(x.strides()) + " differ from torch's " +
                shape_str(torch_strides));
  }
  if (spec["requires_grad"].as_bool()) x.requires_grad_(true);
  return x;
}

int64_t arg_int(const json::Value& args, const char* name) { return args[name].as_int64(); }
// A number, or one JSON cannot hold written as a string: "-inf", "inf", "nan".
double arg_double(const json::Value& args, const char* name) {
  const json::Value& v = args[name];
  if (!v.is_string()) return v.as_double();
  if (v.as_string() == "-inf") return -INFINITY;
  if (v.as_string() == "inf") return INFINITY;
  if (v.as_string() == "nan") return NAN;
  throw Error(v.where() + ": expected a number or \"-inf\", \"inf\", \"nan\", got \"" + v.as_string() + "\"");
}
bool arg_bool(const json::Value& args, const char* name) { return args[name].as_bool(); }
// A number as the Python script wrote it: 3 is an integer Scalar, 3.0 a floating one.
Scalar arg_scalar(const json::Value& args, const char* name) {
  try {
    return Scalar(static_cast<long long>(args[name].as_int64()));
  } catch (const Error&) {
    return Scalar(arg_double(args, name));
  }
}
Shape arg_shape(const json::Value& args, const char* name) { return shape_of(args[name]); }
std::optional<double> arg_optional(const json::Value& args, const char* name) {
  if (args[name].is_null()) return std::nullopt;
  return args[name].as_double();
}
std::optional<int64_t> arg_optional_int(const json::Value& args, const char* name) {
  if (args[name].is_null()) return std::nullopt;
  return args[name].as_int64();
}

// --- the dispatch table: op name in the JSON -> the tapegrad call ---------------------------------------

using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;
// A plain function pointer (no entry captures anything): cheaper to compile than a std::function each.
using OpFn = Outputs (*)(const Inputs& x, const json::Value& args);

Outputs one(const Tensor& t) { return {t}; }

Outputs values_and_indices(const ValuesIndices& r) { return {r.values, r.indices}; }
// The pieces of a split, each times its position + 1, joined again (as the reference script).
Tensor weighted_cat(const std::vector<Tensor>& parts, int64_t dim) {
  std::vector<Tensor> weighted;
  for (size_t i = 0; i < parts.size(); ++i) weighted.push_back(parts[i] * static_cast<double>(i + 1));
  return cat(weighted, dim);
}

const std::map<std::string, OpFn>& op_table() {
  using A = const json::Value&;
  using X = const Inputs&;
  static const std::map<std::string, OpFn> table = {
      // creation
      {"arange", [](X, A a) { return one(arange(arg_double(a, "start"), arg_double(a, "end"), arg_double(a, "step"),
                                                dtype_from_name(a["dtype"].as_string()))); }},
      {"eye", [](X, A a) { return one(eye(arg_int(a, "n"), dtype_from_name(a["dtype"].as_string()))); }},
      {"tril", [](X x, A a) { return one(tril(x[0], arg_int(a, "diagonal"))); }},
      {"triu", [](X x, A a) { return one(triu(x[0], arg_int(a, "diagonal"))); }},
      {"stack", [](X x, A a) { return one(stack(x, arg_int(a, "dim"))); }},
      {"cat", [](X x, A a) { return one(cat(x, arg_int(a, "dim"))); }},
      // views
      {"view", [](X x, A a) { return one(x[0].view(arg_shape(a, "shape"))); }},
      {"reshape", [](X x, A a) { return one(x[0].reshape(arg_shape(a, "shape"))); }},
      {"flatten", [](X x, A a) { return one(x[0].flatten(arg_int(a, "start"), arg_int(a, "end"))); }},
      {"transpose", [](X x, A a) { return one(x[0].transpose(arg_int(a, "dim0"), arg_int(a, "dim1"))); }},
      {"permute", [](X x, A a) { return one(x[0].permute(arg_shape(a, "dims"))); }},
      {"t", [](X x, A) { return one(x[0].t()); }},
      {"mT", [](X x, A) { return one(x[0].mT()); }},
      {"unsqueeze", [](X x, A a) { return one(x[0].unsqueeze(arg_int(a, "dim"))); }},
      {"squeeze", [](X x, A) { return one(x[0].squeeze()); }},
      {"squeeze_dim", [](X x, A a) { return one(x[0].squeeze(arg_int(a, "dim"))); }},
      {"expand", [](X x, A a) { return one(x[0].expand(arg_shape(a, "shape"))); }},
      {"select", [](X x, A a) { return one(x[0].select(arg_int(a, "dim"), arg_int(a, "index"))); }},
      {"narrow", [](X x, A a) { return one(x[0].narrow(arg_int(a, "dim"), arg_int(a, "start"), arg_int(a, "length"))); }},
      {"slice", [](X x, A a) {
         return one(x[0].slice(arg_int(a, "dim"), arg_int(a, "start"), arg_optional_int(a, "end"), arg_int(a, "step")));
       }},
      {"contiguous", [](X x, A) { return one(x[0].contiguous()); }},
      {"clone", [](X x, A) { return one(x[0].clone()); }},
      {"to", [](X x, A a) { return one(x[0].to(dtype_from_name(a["dtype"].as_string()))); }},
      // arithmetic
      {"add", [](X x, A a) { return one(add(x[0], x[1], arg_double(a, "alpha"))); }},
      {"sub", [](X x, A a) { return one(sub(x[0], x[1], arg_double(a, "alpha"))); }},
      {"mul", [](X x, A) { return one(mul(x[0], x[1])); }},
      {"div", [](X x, A) { return one(div(x[0], x[1])); }},
      {"add_scalar", [](X x, A a) { return one(add(x[0], arg_double(a, "other"))); }},
      {"sub_scalar", [](X x, A a) { return one(sub(x[0], arg_double(a, "other"))); }},
      {"mul_scalar", [](X x, A a) { return one(mul(x[0], arg_double(a, "other"))); }},
      {"div_scalar", [](X x, A a) { return one(div(x[0], arg_double(a, "other"))); }},
      {"rsub", [](X x, A a) { return one(rsub(x[0], arg_double(a, "other"))); }},
      {"rdiv", [](X x, A a) { return one(rdiv(x[0], arg_double(a, "other"))); }},
      {"neg", [](X x, A) { return one(neg(x[0])); }},
      {"pow_scalar", [](X x, A a) { return one(pow(x[0], arg_scalar(a, "exponent"))); }},
      {"pow_tensor", [](X x, A) { return one(pow(x[0], x[1])); }},
      // elementwise math and activations
      {"exp", [](X x, A) { return one(exp(x[0])); }},
      {"log", [](X x, A) { return one(log(x[0])); }},
      {"sqrt", [](X x, A) { return one(sqrt(x[0])); }},
      {"abs", [](X x, A) { return one(abs(x[0])); }},
      {"clamp", [](X x, A a) { return one(clamp(x[0], arg_optional(a, "min"), arg_optional(a, "max"))); }},
      {"tanh", [](X x, A) { return one(tanh(x[0])); }},
      {"sigmoid", [](X x, A) { return one(sigmoid(x[0])); }},
      {"silu", [](X x, A) { return one(silu(x[0])); }},
      {"swiglu", [](X x, A) { return one(swiglu(x[0], x[1])); }},
      {"relu", [](X x, A) { return one(relu(x[0])); }},
      {"gelu", [](X x, A a) { return one(gelu(x[0], a["approximate"].as_string())); }},
      // comparisons, where, masked_fill
      {"eq", [](X x, A) { return one(eq(x[0], x[1])); }},
      {"ne", [](X x, A) { return one(ne(x[0], x[1])); }},
      {"lt", [](X x, A) { return one(lt(x[0], x[1])); }},
      {"le", [](X x, A) { return one(le(x[0], x[1])); }},
      {"gt", [](X x, A) { return one(gt(x[0], x[1])); }},
      {"ge", [](X x, A) { return one(ge(x[0], x[1])); }},
      {"eq_scalar", [](X x, A a) { return one(eq(x[0], arg_double(a, "other"))); }},
      {"ne_scalar", [](X x, A a) { return one(ne(x[0], arg_double(a, "other"))); }},
      {"lt_scalar", [](X x, A a) { return one(lt(x[0], arg_double(a, "other"))); }},
      {"le_scalar", [](X x, A a) { return one(le(x[0], arg_double(a, "other"))); }},
      {"gt_scalar", [](X x, A a) { return one(gt(x[0], arg_double(a, "other"))); }},
      {"ge_scalar", [](X x, A a) { return one(ge(x[0], arg_double(a, "other"))); }},
      {"logical_not", [](X x, A) { return one(logical_not(x[0])); }},
      {"where", [](X x, A) { return one(where(x[0], x[1], x[2])); }},
      {"masked_fill", [](X x, A a) { return one(masked_fill(x[0], x[1], arg_double(a, "value"))); }},
      // reductions
      {"sum", [](X x, A) { return one(sum(x[0])); }},
      {"sum_dim", [](X x, A a) { return one(sum(x[0], arg_int(a, "dim"), arg_bool(a, "keepdim"))); }},
      {"mean", [](X x, A) { return one(mean(x[0])); }},
      {"mean_dim", [](X x, A a) { return one(mean(x[0], arg_int(a, "dim"), arg_bool(a, "keepdim"))); }},
      {"var", [](X x, A a) { return one(var(x[0].reshape({-1}), 0, arg_bool(a, "unbiased"))); }},
      {"var_dim", [](X x, A a) {
         return one(var(x[0], arg_int(a, "dim"), arg_bool(a, "unbiased"), arg_bool(a, "keepdim")));
       }},
      {"max", [](X x, A) { return one(max(x[0])); }},
      {"min", [](X x, A) { return one(min(x[0])); }},
      {"max_dim", [](X x, A a) { return values_and_indices(max(x[0], arg_int(a, "dim"), arg_bool(a, "keepdim"))); }},
      {"min_dim", [](X x, A a) { return values_and_indices(min(x[0], arg_int(a, "dim"), arg_bool(a, "keepdim"))); }},
      {"argmax", [](X x, A) { return one(argmax(x[0])); }},
      {"argmax_dim", [](X x, A a) { return one(argmax(x[0], arg_int(a, "dim"), arg_bool(a, "keepdim"))); }},
      {"sum_to", [](X x, A a) { return one(sum_to(x[0], arg_shape(a, "shape"))); }},
      // linear algebra and neural-network functions
      {"matmul", [](X x, A) { return one(matmul(x[0], x[1])); }},
      {"softmax", [](X x, A a) { return one(softmax(x[0], arg_int(a, "dim"))); }},
      {"log_softmax", [](X x, A a) { return one(log_softmax(x[0], arg_int(a, "dim"))); }},
      {"cross_entropy", [](X x, A) { return one(cross_entropy(x[0], x[1])); }},
      {"cross_entropy_opts", [](X x, A a) {
         return one(cross_entropy(x[0], x[1], a["reduction"].as_string(), arg_int(a, "ignore_index"),
                                  arg_double(a, "label_smoothing")));
       }},
      {"embedding", [](X x, A) { return one(embedding(x[0], x[1])); }},
      // scans, sorting, indexing, NaN tests, elementwise extremes
      {"sin", [](X x, A) { return one(sin(x[0])); }},
      {"cos", [](X x, A) { return one(cos(x[0])); }},
      {"isnan", [](X x, A) { return one(isnan(x[0])); }},
      {"isfinite", [](X x, A) { return one(isfinite(x[0])); }},
      {"logical_and", [](X x, A) { return one(logical_and(x[0], x[1])); }},
      {"logical_or", [](X x, A) { return one(logical_or(x[0], x[1])); }},
      {"maximum", [](X x, A) { return one(maximum(x[0], x[1])); }},
      {"minimum", [](X x, A) { return one(minimum(x[0], x[1])); }},
      {"argmin", [](X x, A) { return one(argmin(x[0])); }},
      {"argmin_dim", [](X x, A a) { return one(argmin(x[0], arg_int(a, "dim"), arg_bool(a, "keepdim"))); }},
      {"cumsum", [](X x, A a) { return one(cumsum(x[0], arg_int(a, "dim"))); }},
      {"sort", [](X x, A a) { return values_and_indices(sort(x[0], arg_int(a, "dim"), arg_bool(a, "descending"))); }},
      {"argsort", [](X x, A a) { return one(argsort(x[0], arg_int(a, "dim"), arg_bool(a, "descending"))); }},
      {"topk", [](X x, A a) {
         return values_and_indices(topk(x[0], arg_int(a, "k"), arg_int(a, "dim"), arg_bool(a, "largest")));
       }},
      {"gather", [](X x, A a) { return one(gather(x[0], arg_int(a, "dim"), x[1])); }},
      {"scatter_add", [](X x, A a) { return one(scatter_add(x[0], arg_int(a, "dim"), x[1], x[2])); }},
      {"index_select", [](X x, A a) { return one(index_select(x[0], arg_int(a, "dim"), x[1])); }},
      {"split", [](X x, A a) { return one(weighted_cat(split(x[0], arg_int(a, "size"), arg_int(a, "dim")), arg_int(a, "dim"))); }},
      {"split_sizes", [](X x, A a) {
         const Shape sizes = arg_shape(a, "sizes");
         return one(weighted_cat(split(x[0], std::vector<int64_t>(sizes.begin(), sizes.end()), arg_int(a, "dim")),
                                 arg_int(a, "dim")));
       }},
      {"chunk", [](X x, A a) { return one(weighted_cat(chunk(x[0], arg_int(a, "chunks"), arg_int(a, "dim")), arg_int(a, "dim"))); }},
      {"layer_norm", [](X x, A a) {
         const Tensor weight = x.size() > 1 ? x[1] : Tensor();
         const Tensor bias = x.size() > 2 ? x[2] : Tensor();
         return one(layer_norm(x[0], arg_shape(a, "normalized_shape"), weight, bias, arg_double(a, "eps")));
       }},
      {"apply_rotary_pos_emb", [](X x, A) { return one(apply_rotary_pos_emb(x[0], x[1], x[2])); }},
      {"rms_norm", [](X x, A a) {
         const Tensor weight = x.size() > 1 ? x[1] : Tensor();
         return one(rms_norm(x[0], arg_shape(a, "normalized_shape"), weight, arg_optional(a, "eps")));
       }},
  };
  return table;
}

// --- tolerances ---------------------------------------------------------------------------------------------

struct Tolerance {
  double atol;
  double rtol;
};

// float32: atol 1e-5, rtol 1e-4. float64: atol 1e-12, rtol 1e-10 (both far above the rounding
// differences of a different summation order, far below any wrong formula).
Tolerance tolerance_for(const std::string& op, ScalarType dtype) {
  (void)op;  // no op needs its own tolerance so far; add one here, with a comment saying why
  if (dtype == kFloat64) return {1e-12, 1e-10};
  return {1e-5, 1e-4};
}

// The dtype whose tolerance a case gets: its first floating input's, else its output's.
ScalarType tolerance_dtype(const Inputs& inputs, const Outputs& outputs) {
  for (const Tensor& x : inputs)
    if (x.is_floating_point()) return x.dtype();
  if (!outputs.empty() && outputs[0].is_floating_point()) return outputs[0].dtype();
  return kFloat32;
}

// --- comparing -------------------------------------------------------------------------------------------------

struct Comparison {
  double max_abs_error = 0;
  double max_excess = 0;  // error / (atol + rtol * |ref|): above 1 fails
  std::vector<std::string> failures;
};

bool same_special(double got, double ref) {
  return (std::isnan(got) && std::isnan(ref)) || (std::isinf(got) && got == ref);
}

// got vs the stored tensor ref, element by element. `what` names the tensor in messages.
Comparison compare(const Tensor& got, const json::Value& ref, const Tolerance& tol, const std::string& what) {
  Comparison c;
  const Shape ref_shape = shape_of(ref["shape"]);
  const ScalarType ref_dtype = dtype_from_name(ref["dtype"].as_string());
  if (got.sizes() != ref_shape) {
    c.failures.push_back(what + ": shape " + shape_str(got.sizes()) + ", torch " + shape_str(ref_shape));
    c.max_abs_error = INFINITY;
    return c;
  }
  if (got.dtype() != ref_dtype) {
    c.failures.push_back(what + ": dtype " + dtype_name(got.dtype()) + ", torch " + dtype_name(ref_dtype));
  }
  const std::vector<double> g = got.tolist<double>();
  const std::vector<double> r = values_of(ref);
  for (size_t i = 0; i < g.size(); ++i) {
    if (same_special(g[i], r[i])) continue;
    const double error = std::abs(g[i] - r[i]);
    const double allowed = tol.atol + tol.rtol * std::abs(r[i]);
    const double excess = std::isnan(error) ? INFINITY : error / allowed;
    c.max_abs_error = std::max(c.max_abs_error, std::isnan(error) ? INFINITY : error);
    c.max_excess = std::max(c.max_excess, excess);
    if (excess > 1.0 && c.failures.size() < 8) {
      std::ostringstream os;
      os << std::setprecision(9) << what << ": element " << i << " of shape " << shape_str(ref_shape) << ": got "
         << g[i] << ", torch " << r[i] << ", error " << error << " > " << allowed << " (atol " << tol.atol
         << " + rtol " << tol.rtol << " * |torch|)";
      c.failures.push_back(os.str());
    }
  }
  return c;
}

// An input torch never sent a gradient to: ours must be absent or all zero.
Comparison expect_no_gradient(const Tensor& grad, const std::string& what) {
  Comparison c;
  if (!grad.defined()) return c;
  for (double v : grad.tolist<double>()) {
    if (v != 0) {
      c.failures.push_back(what + ": torch has no gradient here, got a nonzero one (" + std::to_string(v) + ")");
      c.max_abs_error = INFINITY;
      break;
    }
  }
  return c;
}

// --- coverage across the suite -----------------------------------------------------------------------------------

struct OpCoverage {
  int cases = 0;
  int passed = 0;
  int pending = 0;  // "not implemented yet"
  double forward_error = 0;
  double grad_error = 0;
  double worst_excess = 0;
};

std::map<std::string, OpCoverage>& coverage() {
  static std::map<std::string, OpCoverage> table;
  return table;
}

std::string coverage_table() {
  std::ostringstream os;
  os << "| op | cases | passed | pending | forward max abs err | grad max abs err | worst err / tol |\n";
  os << "|---|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& [op, c] : coverage()) {
    os << "| " << op << " | " << c.cases << " | " << c.passed << " | " << c.pending << " | " << std::setprecision(3)
       << std::scientific << c.forward_error << " | " << c.grad_error << " | " << c.worst_excess << " |\n"
       << std::defaultfloat;
  }
  return os.str();
}

// The folder of the running test binary (the build dir), via /proc/self/exe.
std::filesystem::path binary_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::current_path() : exe.parent_path();
}

// --- the test -----------------------------------------------------------------------------------------------------

const json::Value* find_case(const std::string& id) {
  for (const json::Value& c : reference()["cases"].as_array())
    if (c["id"].as_string() == id) return &c;
  return nullptr;
}

std::vector<std::string> case_ids() {
  std::vector<std::string> ids;
  try {
    for (const json::Value& c : reference()["cases"].as_array()) ids.push_back(c["id"].as_string());
  } catch (const std::exception& e) {
    std::cerr << "OpsVsTorch: cannot read " << kReferencePath << ": " << e.what() << "\n";
    ids.push_back("reference_file_unreadable");
  }
  return ids;
}

class OpsVsTorch : public ::testing::TestWithParam<std::string> {
 public:
  static void TearDownTestSuite() {
    const std::string table = coverage_table();
    std::cout << "\nop coverage vs torch (" << kReferencePath << "):\n" << table;
    const auto path = binary_dir() / "op_coverage_vs_torch.md";
    std::ofstream(path) << "# tapegrad ops vs PyTorch 1.13\n\n" << table;
    std::cout << "written to " << path.string() << "\n";
  }
};

TEST_P(OpsVsTorch, Matches) {
  const std::string id = GetParam();
  ASSERT_NO_THROW(reference()) << "cannot read " << kReferencePath;
  const json::Value* found = find_case(id);
  ASSERT_NE(found, nullptr) << "no case " << id;
  const json::Value& tc = *found;
  const std::string op = tc["op"].as_string();
  OpCoverage& cov = coverage()[op];
  cov.cases++;
  const auto entry = op_table().find(op);
  ASSERT_NE(entry, op_table().end()) << id << ": op '" << op << "' is not in the dispatch table of " << __FILE__;

  Inputs inputs;
  for (const json::Value& spec : tc["inputs"].as_array()) inputs.push_back(make_input(spec));
  Outputs outputs;
  try {
    outputs = entry->second(inputs, tc["args"]);
  } catch (const Error& e) {
    if (std::string(e.what()).find("not implemented yet") != std::string::npos) {
      cov.pending++;
      GTEST_SKIP() << id << ": " << e.what();
    }
    FAIL() << id << ": " << op << " threw: " << e.what();
  }

  const Tolerance tol = tolerance_for(op, tolerance_dtype(inputs, outputs));

  std::vector<Comparison> results;
  const auto& ref_outputs = tc["outputs"].as_array();
  ASSERT_EQ(outputs.size(), ref_outputs.size()) << id << ": number of outputs";
  for (size_t k = 0; k < outputs.size(); ++k) {
    results.push_back(compare(outputs[k], ref_outputs[k], tol, id + ": output " + std::to_string(k)));
    cov.forward_error = std::max(cov.forward_error, results.back().max_abs_error);
  }

  if (!tc["grad_output"].is_null()) {
    ASSERT_TRUE(outputs[0].requires_grad()) << id << ": torch's output requires grad, ours does not";
    try {
      outputs[0].backward(decode_tensor(tc["grad_output"]));
    } catch (const Error& e) {
      if (std::string(e.what()).find("not implemented yet") != std::string::npos) {
        cov.pending++;
        GTEST_SKIP() << id << ": backward: " << e.what();
      }
      FAIL() << id << ": backward threw: " << e.what();
    }
    const auto& ref_grads = tc["grads"].as_array();
    for (size_t k = 0; k < inputs.size(); ++k) {
      if (!inputs[k].requires_grad()) continue;
      const std::string what = id + ": gradient of input " + std::to_string(k);
      if (ref_grads[k].is_null()) {
        results.push_back(expect_no_gradient(inputs[k].grad(), what));
      } else if (!inputs[k].grad().defined()) {
        results.push_back(Comparison{INFINITY, INFINITY, {what + ": torch has a gradient, ours is undefined"}});
      } else {
        results.push_back(compare(inputs[k].grad(), ref_grads[k], tol, what));
      }
      cov.grad_error = std::max(cov.grad_error, results.back().max_abs_error);
    }
  } else {
    EXPECT_FALSE(outputs[0].requires_grad() && outputs[0].is_floating_point() &&
                 std::any_of(inputs.begin(), inputs.end(), [](const Tensor& x) { return x.requires_grad(); }))
        << id << ": torch's output has no gradient, ours requires grad";
  }

  bool ok = true;
  for (const Comparison& c : results) {
    cov.worst_excess = std::max(cov.worst_excess, c.max_excess);
    for (const std::string& f : c.failures) {
      ADD_FAILURE() << f;
      ok = false;
    }
  }
  if (ok) cov.passed++;
}

std::string case_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

INSTANTIATE_TEST_SUITE_P(, OpsVsTorch, ::testing::ValuesIn(case_ids()), case_name);

// Every op in the dispatch table has at least one case in the reference file, and every case
// names an op in the table.
TEST(OpsVsTorchFile, EveryOpHasACaseAndEveryCaseAnOp) {
  std::map<std::string, int> cases_per_op;
  for (const auto& [op, fn] : op_table()) cases_per_op[op] = 0;
  for (const json::Value& c : reference()["cases"].as_array()) {
    const std::string op = c["op"].as_string();
    EXPECT_TRUE(cases_per_op.count(op)) << c["id"].as_string() << ": op '" << op << "' is not in the table";
    cases_per_op[op]++;
  }
  for (const auto& [op, n] : cases_per_op) EXPECT_GT(n, 0) << "no reference case for " << op;
}

}  // namespace
}  // namespace tg
