// autograd/tape_anomaly.cpp — anomaly mode (see tape.h): the first op whose forward output holds
// a NaN, or whose backward gives an input a NaN or Inf gradient, throws an Error naming the op,
// its tape entry, the direction and statistics of its inputs.
#include <cmath>
#include <sstream>

#include "autograd/runtime/environment.h"
#include "autograd/tape_internal.h"

namespace tg {

namespace {

bool anomaly_from_environment() { return environment_choice("TG_DETECT_ANOMALY", {"0", "1"}).value_or("0") == "1"; }

// This thread's switch, from the environment on first use. (At block scope: a bad
// TG_DETECT_ANOMALY throws to that caller; a thread_local at namespace scope would terminate.)
bool& anomaly_enabled() {
  thread_local bool enabled = anomaly_from_environment();
  return enabled;
}

struct Stats {
  int64_t nan = 0, inf = 0;
  double min = INFINITY, max = -INFINITY, mean = 0;
};

Stats stats_of(const Tensor& t) {
  Stats s;
  if (!t.defined() || !is_floating(t.dtype())) return s;
  double total = 0;
  int64_t finite = 0;
  for (double v : t.tolist<double>()) {
    if (std::isnan(v)) { s.nan++; continue; }
    if (std::isinf(v)) { s.inf++; }
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
    if (std::isfinite(v)) { total += v; finite++; }
  }
  s.mean = finite ? total / static_cast<double>(finite) : NAN;
  return s;
}

std::string describe(const Tensor& t) {
  if (!t.defined()) return "undefined";
  std::ostringstream os;
  os << shape_str(t.sizes()) << " " << dtype_name(t.dtype());
  if (is_floating(t.dtype())) {
    Stats s = stats_of(t);
    os << " min " << s.min << " max " << s.max << " mean " << s.mean << " nan " << s.nan << " inf " << s.inf;
  }
  return os.str();
}

void throw_anomaly(const std::string& op, const std::string& entry, const char* direction,
                   const std::string& what, const std::vector<Tensor>& inputs) {
  std::ostringstream os;
  os << "anomaly: " << op << " (" << entry << ") " << direction << " produced " << what;
  for (size_t i = 0; i < inputs.size(); ++i) os << "\n  input " << i << ": " << describe(inputs[i]);
  throw Error(os.str());
}


}  // namespace

bool anomaly_mode_enabled() { return anomaly_enabled(); }
AnomalyModeGuard::AnomalyModeGuard(bool enabled) : previous_(anomaly_enabled()) { anomaly_enabled() = enabled; }
AnomalyModeGuard::~AnomalyModeGuard() { anomaly_enabled() = previous_; }

void check_forward_anomaly(const char* name, const std::vector<Tensor>& inputs, const Tensor& out, bool recorded) {
  Stats s = stats_of(out);
  if (s.nan == 0) return;
  throw_anomaly(name,
                recorded ? "tape entry #" + std::to_string(upcoming_sequence_number())
                         : std::string(grad_mode_enabled() ? "not recorded: no input requires grad"
                                                           : "not recorded: grad mode is off"),
                "forward", std::to_string(s.nan) + " NaN in its output " + shape_str(out.sizes()), inputs);
}

void check_backward_anomaly(const Node& node, size_t input, const Tensor& grad, const Tensor& grad_out) {
  Stats s = stats_of(grad);
  if (s.nan > 0 || s.inf > 0) {
    throw_anomaly(node.name, "tape entry #" + std::to_string(node.sequence), "backward",
                  std::to_string(s.nan) + " NaN and " + std::to_string(s.inf) +
                      " Inf in the gradient of input " + std::to_string(input),
                  {grad_out});
  }
}

}  // namespace tg
