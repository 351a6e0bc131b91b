// autograd/tape_reading.cpp — the tape, for reading: this thread's live entries, tape_str (one
// line per entry), and the bytes the entries keep alive for backward.
#include <iomanip>
#include <set>
#include <sstream>

#include "autograd/tape_internal.h"

namespace tg {

namespace {

// Bytes of the storages `node` keeps that are not in `seen` yet (then added to it).
size_t add_saved_storages(const Node& node, std::set<const Storage*>& seen) {
  size_t bytes = 0;
  for (const SavedTensor& s : node.saved) {
    if (s.data.defined() && seen.insert(&storage_of(s.data)).second) bytes += storage_of(s.data).nbytes;
  }
  return bytes;
}

}  // namespace

size_t Node::saved_bytes() const {
  std::set<const Storage*> seen;
  return add_saved_storages(*this, seen);
}

size_t saved_bytes(const std::vector<std::shared_ptr<Node>>& entries) {
  std::set<const Storage*> seen;
  size_t total = 0;
  for (const auto& n : entries) total += add_saved_storages(*n, seen);
  return total;
}

std::vector<std::shared_ptr<Node>> tape_entries() {
  std::vector<std::shared_ptr<Node>> out;
  for (auto& w : this_thread_tape().entries)
    if (auto n = w.lock(); n && !n->released) out.push_back(n);
  return out;
}

size_t tape_size() { return tape_entries().size(); }

std::string human_bytes(size_t b) {
  std::ostringstream os;
  if (b < 1024) os << b << " B";
  else if (b < 1024 * 1024) os << std::fixed << std::setprecision(1) << b / 1024.0 << " KiB";
  else os << std::fixed << std::setprecision(1) << b / (1024.0 * 1024.0) << " MiB";
  return os.str();
}

std::string tape_str() {
  std::ostringstream os;
  auto entries = tape_entries();
  os << "tape: " << entries.size() << (entries.size() == 1 ? " entry" : " entries") << " (backward runs them bottom to top)\n";
  for (auto& n : entries) {
    std::string ins;
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      if (i) ins += " ";
      ins += shape_str(n->inputs[i].sizes);
    }
    os << "  #" << std::left << std::setw(4) << n->sequence << " " << std::setw(22) << n->name << " in "
       << std::setw(18) << ins << " -> out " << std::setw(10) << shape_str(n->out_sizes) << " keeps "
       << human_bytes(n->saved_bytes()) << "\n";
  }
  os << "  total kept for backward: " << human_bytes(saved_bytes(entries)) << "\n";
  return os.str();
}

void print_tape(std::ostream& os) { os << tape_str(); }

}  // namespace tg
