// nn/safetensors.cpp — the safetensors reader and writer (the format is described byte by
// byte in nn/safetensors.h).
//
// Reading: the 8-byte length, then the header (checked as UTF-8, parsed by autograd/json, every
// entry checked), then the data ranges checked to tile the data section, and only then the data,
// tensor by tensor, straight into each new tensor's storage. Nothing is allocated for a tensor
// before its byte count is known to fit inside the file.
// Non-finite values (first_nonfinite, check_finite): a tensor is read in slices of 1 MiB, and with
// finite_only each slice's infs and nans are counted while it is in the cache (a 16-bit value
// widened is counted as the float32 it becomes); only a tensor that had one is searched again, for
// the first one's index. Nothing is allocated.
// Writing: the whole header is built (and every name checked) before the file is touched; the
// bytes go to a temporary file that is synced and renamed over the target.
#include "nn/safetensors.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>

#include "autograd/float16.h"
#include "io/atomic_file.h"
#include "io/json.h"
#include "io/user_file.h"
#include "autograd/ops.h"

namespace tg {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; this reader and writer copy it as it is");

namespace {

// The reference implementation refuses headers above 100 MiB; a real one is at most a few MB.
constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;

struct SafetensorsDtype {
  const char* name;
  size_t size;                     // bytes per element
  std::optional<ScalarType> type;  // tapegrad's dtype, if it has one
};

constexpr SafetensorsDtype kDtypes[] = {
    {"F32", 4, kFloat32}, {"F64", 8, kFloat64},   {"I64", 8, kInt64},         {"BOOL", 1, kBool},
    {"F16", 2, kFloat16}, {"BF16", 2, kBFloat16},        {"I32", 4, {}},             {"I16", 2, {}},
    {"I8", 1, {}},        {"U8", 1, {}},          {"U16", 2, {}},             {"U32", 4, {}},
    {"U64", 8, {}},       {"F8_E4M3", 1, {}},     {"F8_E5M2", 1, {}},
};

const char* safetensors_dtype_name(ScalarType type) {
  for (const SafetensorsDtype& d : kDtypes)
    if (d.type == type) return d.name;
  throw Error(std::string("safetensors: no dtype for ") + dtype_name(type));
}

std::string hex_byte(unsigned char c) {
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", c);
  return hex;
}

// ---- non-finite values: the element test ----------------------------------------------------

// inf and nan are the values whose exponent bits are all ones: a test on the element's bits, with
// no branch, which the compiler runs on a vector of elements at a time.
bool exponent_all_ones(float v) { return (std::bit_cast<uint32_t>(v) & 0x7f800000u) == 0x7f800000u; }
bool exponent_all_ones(double v) {
  return (std::bit_cast<uint64_t>(v) & 0x7ff0000000000000u) == 0x7ff0000000000000u;
}
bool exponent_all_ones(BFloat16 v) { return (v.bits & 0x7f80u) == 0x7f80u; }
bool exponent_all_ones(Float16 v) { return (v.bits & 0x7c00u) == 0x7c00u; }

// How many of n contiguous elements are inf or nan: no early exit, so it runs in vector registers.
// A count, not an or of bools: GCC vectorises a sum.
template <class T>
int64_t count_nonfinite(const T* p, int64_t n) {
  int64_t found = 0;
  for (int64_t i = 0; i < n; ++i) found += exponent_all_ones(p[i]);
  return found;
}

// The same count over a tensor's raw bytes, for the floating dtypes (0 for the others).
int64_t count_nonfinite_bytes(ScalarType dtype, const void* data, uint64_t bytes) {
  switch (dtype) {
    case kFloat32: return count_nonfinite(static_cast<const float*>(data), static_cast<int64_t>(bytes / 4));
    case kFloat64: return count_nonfinite(static_cast<const double*>(data), static_cast<int64_t>(bytes / 8));
    case kBFloat16: return count_nonfinite(static_cast<const BFloat16*>(data), static_cast<int64_t>(bytes / 2));
    case kFloat16: return count_nonfinite(static_cast<const Float16*>(data), static_cast<int64_t>(bytes / 2));
    default: return 0;
  }
}

// ---- reading --------------------------------------------------------------------------------

struct Entry {
  std::string name;
  ScalarType dtype;                  // the tensor's
  const SafetensorsDtype* in_file;   // the file's (F16 or BF16 when widened to float32)
  Shape shape;
  uint64_t begin, end;    // data_offsets, relative to the start of the data
  uint64_t offsets_byte;  // where data_offsets is written in the file (for messages)
};

struct Header {
  std::vector<Entry> entries;  // in header order
  SafetensorsMetadata metadata;
  uint64_t data_start = 0;     // 8 + N
};

class Reader {
 public:
  Reader(const std::string& path, const SafetensorsReadOptions& options = {})
      : path_(path), options_(options), file_(path, "load_safetensors: " + path), file_size_(file_.size()) {}

  Header read_header() {
    if (file_size_ < 8) {
      fail(0, "the file has " + std::to_string(file_size_) + " bytes, too few for the 8-byte header length");
    }
    unsigned char prefix[8];
    read_exact(0, prefix, 8);
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | prefix[i];  // little-endian
    if (n > kMaxHeaderBytes) {
      fail(0, "header length " + std::to_string(n) + " is larger than the limit of " +
                  std::to_string(kMaxHeaderBytes) + " bytes");
    }
    if (n > file_size_ - 8) {
      fail(0, "header length " + std::to_string(n) + " runs past the end of the file (" +
                  std::to_string(file_size_) + " bytes)");
    }
    std::string text(n, '\0');
    read_exact(8, text.data(), n);
    size_t bad = json::find_invalid_utf8(text);
    if (bad != std::string::npos) {
      fail(8 + bad, "header is not valid UTF-8 (a sequence starting with byte " +
                        hex_byte(static_cast<unsigned char>(text[bad])) + ")");
    }
    json::Value root;
    try {
      root = json::parse(text, path_);
    } catch (const json::ParseError& e) {
      fail(8 + e.offset, "header is not valid JSON: " + e.reason);
    }
    if (!root.is_object()) fail(8 + root.offset(), std::string("header must be a JSON object, got ") + kind(root));

    Header header;
    header.data_start = data_start_ = 8 + n;
    for (const json::Member& member : root.as_object()) {
      if (member.key == "__metadata__") {
        header.metadata = read_metadata(member.value);
      } else {
        header.entries.push_back(read_entry(member.key, member.value));
      }
    }
    check_tiling(header);
    return header;
  }

  // With options_.finite_only: whether an inf or nan has been read so far (read_in_slices).
  bool read_a_nonfinite_value() const { return nonfinite_read_ > 0; }

  // The entry's data as a new tensor, or read into `into` (contiguous, of its shape and dtype).
  Tensor read_tensor(const Header& header, const Entry& entry, Tensor into = Tensor()) {
    uint64_t start = header.data_start + entry.begin;
    Tensor t = into;
    if (t.defined() && (!t.is_contiguous() || t.sizes() != entry.shape || t.dtype() != entry.dtype)) {
      fail(entry.offsets_byte, "tensor " + json::quote(entry.name) + " is " + dtype_name(entry.dtype) + " of shape " +
                                   shape_str(entry.shape) + " but the tensor to read it into is " +
                                   dtype_name(t.dtype()) + " of shape " + shape_str(t.sizes()) +
                                   (t.is_contiguous() ? "" : ", not contiguous"));
    }
    try {
      if (!t.defined()) t = empty(entry.shape, entry.dtype);
    } catch (const Error& e) {
      fail(entry.offsets_byte, "tensor " + json::quote(entry.name) + ": " + e.what());
    }
    if (entry.dtype != entry.in_file->type) {  // F16 or BF16 to float32
      read_widened(start, entry, t);
      return t;
    }
    read_in_slices(start, static_cast<unsigned char*>(t.raw_data()), entry.end - entry.begin, entry.dtype);
    if (entry.dtype == kBool) {
      const unsigned char* bytes = static_cast<const unsigned char*>(t.raw_data());
      for (uint64_t i = 0; i < entry.end - entry.begin; ++i) {
        if (bytes[i] > 1) {
          fail(start + i, "tensor " + json::quote(entry.name) + ": BOOL element " + std::to_string(i) + " is " +
                              hex_byte(bytes[i]) + ", not 0 or 1");
        }
      }
    }
    return t;
  }

 private:
  [[noreturn]] void fail(uint64_t byte, const std::string& what) const {
    throw Error("load_safetensors: " + path_ + ": byte " + std::to_string(byte) + ": " + what);
  }
  [[noreturn]] void fail_whole(const std::string& what) const {
    throw Error("load_safetensors: " + path_ + ": " + what);
  }
  // Where a header value is in the file.
  static uint64_t at(const json::Value& v) { return 8 + v.offset(); }
  static const char* kind(const json::Value& v) { return json::Value::kind_name(v.kind()); }

  void read_exact(uint64_t offset, void* destination, uint64_t count) {
    if (!file_.read_at(offset, destination, count)) fail(offset, "the file ended early (was it changed while being read?)");
  }

  // Why slices: with options_.finite_only each slice is checked for inf and nan while it is still
  // in the cache, not in a second pass over the whole tensor from memory (a fifth of a large
  // checkpoint's load). The check only counts; for_each_safetensor finds and names the element.
  void read_in_slices(uint64_t offset, unsigned char* destination, uint64_t count, ScalarType dtype) {
    constexpr uint64_t kSlice = uint64_t{1} << 20;  // 1 MiB: a slice stays in the cache
    for (uint64_t done = 0; done < count;) {
      const uint64_t n = std::min(count - done, kSlice);
      read_exact(offset + done, destination + done, n);
      if (options_.finite_only) nonfinite_read_ += count_nonfinite_bytes(dtype, destination + done, n);
      done += n;
    }
  }

  SafetensorsMetadata read_metadata(const json::Value& v) {
    if (!v.is_object()) fail(at(v), std::string("\"__metadata__\" must be an object, got ") + kind(v));
    SafetensorsMetadata metadata;
    for (const json::Member& m : v.as_object()) {
      if (!m.value.is_string()) {
        fail(at(m.value), "\"__metadata__\" value of " + json::quote(m.key) + " must be a string, got " + kind(m.value));
      }
      metadata.push_back({m.key, m.value.as_string()});
    }
    return metadata;
  }

  uint64_t read_uint64(const json::Value& v, const std::string& what) {
    if (v.is_number()) {
      try {
        return v.as_uint64();
      } catch (const Error&) {
      }
      fail(at(v), what + " must be an integer in [0, 2^64), got " + v.number_text());
    }
    fail(at(v), what + " must be an integer, got " + kind(v));
  }

  // 16-bit floats' bits, then each converted to float32 into t.
  // 16-bit values widened to float32, read a slice of at most 8 MiB at a time (a whole BF16
  // embedding at once would be hundreds of MB more at a loader's peak).
  void read_widened(uint64_t start, const Entry& entry, Tensor& t) {
    const uint64_t count = (entry.end - entry.begin) / 2;
    std::vector<uint16_t> bits(static_cast<size_t>(std::min<uint64_t>(count, uint64_t{1} << 22)));
    float* out = t.data_ptr<float>();
    const bool is_f16 = std::string(entry.in_file->name) == "F16";
    for (uint64_t done = 0; done < count;) {
      const uint64_t n = std::min<uint64_t>(count - done, bits.size());
      read_exact(start + 2 * done, bits.data(), 2 * n);
      for (uint64_t i = 0; i < n; ++i)
        out[done + i] = is_f16 ? float16_bits_to_float(bits[i]) : static_cast<float>(BFloat16::from_bits(bits[i]));
      if (options_.finite_only) nonfinite_read_ += count_nonfinite(out + done, static_cast<int64_t>(n));
      done += n;
    }
  }

  // Read as float32 (every entry named `tensor` of this dtype, when tensor is empty).
  bool widened(const SafetensorsDtype& d, const std::string& tensor = "") const {
    const std::string name = d.name;
    if ((name == "BF16" || name == "F16") && !tensor.empty() && options_.keep_16bit && options_.keep_16bit(tensor))
      return false;
    return options_.float16_to_float32 && (name == "F16" || name == "BF16");
  }

  const SafetensorsDtype& read_dtype(const json::Value& v, const std::string& tensor) {
    if (!v.is_string()) fail(at(v), tensor + ": dtype must be a string, got " + kind(v));
    for (const SafetensorsDtype& d : kDtypes) {
      if (v.as_string() != d.name) continue;
      if (!d.type && !widened(d)) {
        fail(at(v), tensor + ": dtype " + d.name + " is not supported by tapegrad (it reads F32, F64, I64, BOOL, BF16, F16)");
      }
      return d;
    }
    fail(at(v), tensor + ": dtype " + json::quote(v.as_string()) + " is not a safetensors dtype");
  }

  // The shape, and its byte count checked for overflow: every dim fits int64, and so does the
  // product of the non-zero dims times the element size (then every stride fits as well).
  uint64_t read_shape(const json::Value& v, const std::string& tensor, size_t element_size, Shape& shape) {
    if (!v.is_array()) fail(at(v), tensor + ": shape must be an array, got " + kind(v));
    uint64_t nonzero_bytes = element_size;
    bool has_zero = false;
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string dim = tensor + ": shape[" + std::to_string(i) + "]";
      uint64_t size = read_uint64(v[i], dim);
      if (size > static_cast<uint64_t>(INT64_MAX)) {
        fail(at(v[i]), dim + " = " + std::to_string(size) + " is larger than 2^63 - 1");
      }
      shape.push_back(static_cast<int64_t>(size));
      if (size == 0) {
        has_zero = true;
      } else if (nonzero_bytes > static_cast<uint64_t>(INT64_MAX) / size) {
        fail(at(v), tensor + ": shape has more than 2^63 - 1 bytes (at shape[" + std::to_string(i) + "])");
      } else {
        nonzero_bytes *= size;
      }
    }
    return has_zero ? 0 : nonzero_bytes;
  }

  Entry read_entry(const std::string& name, const json::Value& v) {
    const std::string tensor = "tensor " + json::quote(name);
    if (name.empty()) fail(at(v), "a tensor has an empty name");
    if (!v.is_object()) fail(at(v), tensor + " must be an object, got " + kind(v));
    for (const json::Member& m : v.as_object()) {
      if (m.key != "dtype" && m.key != "shape" && m.key != "data_offsets") {
        fail(at(m.value), tensor + ": unexpected field " + json::quote(m.key) + " (expected dtype, shape, data_offsets)");
      }
    }
    auto field = [&](const char* key) -> const json::Value& {
      const json::Value* f = v.find(key);
      if (f == nullptr) fail(at(v), tensor + ": no field \"" + key + "\"");
      return *f;
    };
    Entry entry;
    entry.name = name;
    const SafetensorsDtype& dtype = read_dtype(field("dtype"), tensor);
    entry.in_file = &dtype;
    entry.dtype = widened(dtype, name) ? kFloat32 : *dtype.type;
    uint64_t nbytes = read_shape(field("shape"), tensor, dtype.size, entry.shape);

    const json::Value& offsets = field("data_offsets");
    if (!offsets.is_array() || offsets.size() != 2) {
      fail(at(offsets), tensor + ": data_offsets must be an array [begin, end], got " +
                            (offsets.is_array() ? "an array of " + std::to_string(offsets.size()) + " elements" : kind(offsets)));
    }
    entry.begin = read_uint64(offsets[0], tensor + ": data_offsets[0]");
    entry.end = read_uint64(offsets[1], tensor + ": data_offsets[1]");
    entry.offsets_byte = at(offsets);
    const std::string range = tensor + ": data_offsets [" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) + "]";
    if (entry.end < entry.begin) fail(at(offsets), range + " end before they begin");
    if (entry.end - entry.begin != nbytes) {
      fail(at(offsets), range + " hold " + std::to_string(entry.end - entry.begin) + " bytes, but " + dtype.name + " shape " +
                            shape_str(entry.shape) + " needs " + std::to_string(nbytes));
    }
    uint64_t data_size = file_size_ - data_start_;
    if (entry.end > data_size) {
      fail(at(offsets), range + " run past the end of the data (" + std::to_string(data_size) + " bytes)");
    }
    return entry;
  }

  // The ranges, sorted by where they begin, must follow each other exactly from 0 to the end of
  // the data.
  void check_tiling(const Header& header) {
    std::vector<const Entry*> sorted;
    for (const Entry& e : header.entries) sorted.push_back(&e);
    std::stable_sort(sorted.begin(), sorted.end(), [](const Entry* a, const Entry* b) {
      return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
    });
    uint64_t covered = 0;  // data bytes [0, covered) belong to the tensors seen so far
    const Entry* previous = nullptr;
    for (const Entry* e : sorted) {
      if (e->begin < covered) {
        fail(e->offsets_byte, "tensor " + json::quote(e->name) + ": data_offsets [" + std::to_string(e->begin) + ", " +
                                  std::to_string(e->end) + "] overlap those of tensor " + json::quote(previous->name) + " [" +
                                  std::to_string(previous->begin) + ", " + std::to_string(previous->end) + "]");
      }
      if (e->begin > covered) {
        fail(e->offsets_byte, "tensor " + json::quote(e->name) + ": data_offsets begin at " + std::to_string(e->begin) +
                                  ", leaving data bytes [" + std::to_string(covered) + ", " +
                                  std::to_string(e->begin) + ") to no tensor");
      }
      covered = e->end;
      previous = e;
    }
    uint64_t data_size = file_size_ - header.data_start;
    if (covered != data_size) {
      fail(header.data_start + covered, "data bytes [" + std::to_string(covered) + ", " + std::to_string(data_size) +
                                            ") after the last tensor belong to no tensor");
    }
  }

  std::string path_;
  SafetensorsReadOptions options_;
  UserFile file_;  // checked to be a regular file before it was opened
  uint64_t file_size_ = 0;
  uint64_t data_start_ = 0;  // 8 + N, once the length is read
  int64_t nonfinite_read_ = 0;  // with options_.finite_only: the infs and nans read so far
};

// ---- writing --------------------------------------------------------------------------------

[[noreturn]] void save_error(const std::string& path, const std::string& what) {
  throw Error("save_safetensors: " + path + ": " + what);
}

void check_utf8(const std::string& path, const std::string& text, const std::string& what) {
  size_t bad = json::find_invalid_utf8(text);
  if (bad != std::string::npos) {
    save_error(path, what + " " + json::quote(text) + " is not valid UTF-8 (byte " +
                         hex_byte(static_cast<unsigned char>(text[bad])) + " at " + std::to_string(bad) + ")");
  }
}

// The header in the canonical layout (see safetensors.h), spaces included. Checks every name.
std::string make_header(const std::string& path, const std::vector<TensorToWrite>& tensors,
                        const SafetensorsMetadata& metadata) {
  json::Writer header(json::Layout::Compact);
  if (!metadata.empty()) {
    std::set<std::string> keys;
    json::Writer fields(json::Layout::Compact);
    for (const auto& [key, value] : metadata) {
      if (!keys.insert(key).second) save_error(path, "metadata key " + json::quote(key) + " is given twice");
      check_utf8(path, key, "metadata key");
      check_utf8(path, value, "metadata value");
      fields.field(key, value);
    }
    header.field("__metadata__", fields);
  }
  std::set<std::string> names;
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorToWrite& t = tensors[i];
    const std::string& name = t.name;
    if (name.empty()) save_error(path, "tensor " + std::to_string(i) + " has an empty name");
    if (name == "__metadata__") save_error(path, "tensor " + std::to_string(i) + " may not be named \"__metadata__\"");
    if (!names.insert(name).second) save_error(path, "tensor name " + json::quote(name) + " is given twice");
    check_utf8(path, name, "tensor name");
    if (!t.make) save_error(path, "tensor " + json::quote(name) + " is undefined");
    uint64_t nbytes = element_size(t.dtype);
    json::Writer shape = json::Writer::array(json::Layout::Compact);
    for (int64_t size : t.shape) {
      nbytes *= static_cast<uint64_t>(size);
      shape.item(size);
    }
    const uint64_t end = offset + nbytes;
    json::Writer entry(json::Layout::Compact);
    entry.field("dtype", safetensors_dtype_name(t.dtype))
        .field("shape", shape)
        .field("data_offsets", json::Writer::array(json::Layout::Compact).item(offset).item(end));
    header.field(name, entry);
    offset = end;
  }
  std::string json = header.str();
  json.append((8 - json.size() % 8) % 8, ' ');
  return json;
}

}  // namespace

namespace {
// The 8-byte length, the header, then every tensor's logical values (a view's, row-major), each
// made as its turn comes and let go after it.
void write_file(AtomicFile& file, const std::string& header, const std::vector<TensorToWrite>& tensors) {
  unsigned char prefix[8];
  for (int i = 0; i < 8; ++i) prefix[i] = static_cast<unsigned char>(uint64_t{header.size()} >> (8 * i));
  file.write(prefix, 8);
  file.write(header.data(), header.size());
  for (const TensorToWrite& t : tensors) {
    const Tensor values = t.make().detach().contiguous();
    if (values.dtype() != t.dtype || values.sizes() != t.shape)
      save_error(file.target(), "tensor " + json::quote(t.name) + " was announced as " + safetensors_dtype_name(t.dtype) +
                                    " " + shape_str(t.shape) + " but made as " + safetensors_dtype_name(values.dtype()) +
                                    " " + shape_str(values.sizes()));
    if (values.nbytes() > 0) file.write(values.raw_data(), values.nbytes());
  }
}

}  // namespace

std::vector<TensorToWrite> tensors_to_write(const NamedTensors& tensors) {
  std::vector<TensorToWrite> out;
  out.reserve(tensors.size());
  for (const auto& [name, t] : tensors) {
    if (!t.defined()) out.push_back({name, kFloat32, {}, nullptr});  // make_header names it
    else out.push_back({name, t.dtype(), t.sizes(), [t = t] { return t; }});
  }
  return out;
}

void save_safetensors(AtomicFile& file, const std::vector<TensorToWrite>& tensors,
                      const SafetensorsMetadata& metadata) {
  write_file(file, make_header(file.target(), tensors, metadata), tensors);
}

void save_safetensors(AtomicFile& file, const NamedTensors& tensors, const SafetensorsMetadata& metadata) {
  save_safetensors(file, tensors_to_write(tensors), metadata);
}

void save_safetensors(const std::string& path, const NamedTensors& tensors, const SafetensorsMetadata& metadata) {
  const std::vector<TensorToWrite> to_write = tensors_to_write(tensors);
  const std::string header = make_header(path, to_write, metadata);  // names checked before the file is touched
  AtomicFile file(path, "save_safetensors");
  write_file(file, header, to_write);
  file.commit();
}

NamedTensors load_safetensors(const std::string& path) { return load_safetensors(path, SafetensorsReadOptions{}); }

NamedTensors load_safetensors(const std::string& path, const SafetensorsReadOptions& options,
                              std::vector<std::string>* converted) {
  NamedTensors out;
  for_each_safetensor(path, options, [&](const std::string& name, Tensor t) { out.push_back({name, std::move(t)}); });
  if (converted) {
    for (const std::string& d : widened_dtypes(safetensors_entries(path, options)))
      if (std::find(converted->begin(), converted->end(), d) == converted->end()) converted->push_back(d);
  }
  return out;
}

std::vector<SafetensorsEntry> safetensors_entries(const std::string& path, const SafetensorsReadOptions& options) {
  Reader reader(path, options);
  std::vector<SafetensorsEntry> out;
  for (const Entry& e : reader.read_header().entries) out.push_back({e.name, e.shape, e.dtype, e.in_file->name});
  return out;
}

std::vector<std::string> widened_dtypes(const std::vector<SafetensorsEntry>& entries) {
  std::vector<std::string> out;
  for (const SafetensorsEntry& e : entries) {
    const bool widened = e.dtype == kFloat32 && e.file_dtype != "F32";  // F16 or BF16 read as float32
    if (widened && std::find(out.begin(), out.end(), e.file_dtype) == out.end()) out.push_back(e.file_dtype);
  }
  return out;
}

void for_each_safetensor(const std::string& path, const SafetensorsReadOptions& options,
                         const std::function<void(const std::string& name, Tensor tensor)>& fn) {
  Reader reader(path, options);
  const Header header = reader.read_header();
  for (const Entry& entry : header.entries) {
    if (options.skip && options.skip(entry.name)) continue;  // left unread
    Tensor t = reader.read_tensor(header, entry, options.read_into ? options.read_into(entry.name) : Tensor());
    // counted as it was read; check_finite finds and names the first one
    if (options.finite_only && reader.read_a_nonfinite_value()) check_finite({{entry.name, t}}, path);
    fn(entry.name, std::move(t));
  }
}

// ---- non-finite values ----------------------------------------------------------------------

namespace {

// The flat (row-major) index of the first inf or nan among n contiguous elements, or -1; value gets it.
// Why blocks: a loop that stops at the first non-finite element tests one element at a time. A
// whole block's test has no early exit, so it runs in vector registers (a checkpoint's weights
// are checked at each load, and a weight again before it is quantized); only a block that holds
// a non-finite element is searched one element at a time.
template <class T>
int64_t first_nonfinite_index(const T* p, int64_t n, double& value) {
  constexpr int64_t kBlock = 4096;
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t end = std::min(n, start + kBlock);
    if (count_nonfinite(p + start, end - start) == 0) continue;
    for (int64_t i = start; i < end; ++i) {
      if (exponent_all_ones(p[i])) {
        value = static_cast<double>(static_cast<float>(p[i]));  // each widens exactly
        return i;
      }
    }
  }
  return -1;
}

// "[3, 17]": the flat index as one index per dim of shape.
std::string index_in(int64_t flat, const Shape& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  std::string out = "[";
  for (size_t d = 0; d < index.size(); ++d) out += (d ? ", " : "") + std::to_string(index[d]);
  return out + "]";
}

}  // namespace

std::optional<std::string> first_nonfinite(const Tensor& t) {
  if (!(is_floating(t.dtype()) || t.dtype() == kFloat16) || t.numel() == 0) return std::nullopt;
  const Tensor c = t.dtype() == kFloat16 && !t.is_contiguous() ? t.to(kFloat32) : t.detach().contiguous();
  double value = 0;
  int64_t flat = -1;
  switch (c.dtype()) {
    case kFloat32: flat = first_nonfinite_index(c.data_ptr<float>(), c.numel(), value); break;
    case kFloat64: flat = first_nonfinite_index(c.data_ptr<double>(), c.numel(), value); break;
    case kFloat16: flat = first_nonfinite_index(c.data_ptr<Float16>(), c.numel(), value); break;
    default: flat = first_nonfinite_index(c.data_ptr<BFloat16>(), c.numel(), value); break;
  }
  if (flat < 0) return std::nullopt;
  const std::string shown = std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf";
  return "a non-finite value (" + shown + ")" + (t.dim() == 0 ? "" : " at index " + index_in(flat, t.sizes()));
}

void check_finite(const NamedTensors& tensors, const std::string& file) {
  for (const auto& [name, t] : tensors)
    if (const std::optional<std::string> bad = first_nonfinite(t))
      throw Error(file + ": tensor " + json::quote(name) + " has " + *bad);
}

SafetensorsMetadata load_safetensors_metadata(const std::string& path) {
  return Reader(path).read_header().metadata;
}

}  // namespace tg
