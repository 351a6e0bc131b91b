// nn/safetensors.h — named tensors to and from .safetensors files, the format PyTorch users
// share weights in (Hugging Face's safetensors; read and written by PyTorch, JAX, numpy, ...).
// Read save_safetensors and load_safetensors first. The file, byte by byte:
//   bytes 0 .. 7        N, the length of the header: an unsigned 64-bit little-endian integer
//   bytes 8 .. 8+N-1    the header: UTF-8 JSON text, one object with a member per tensor
//                         {"wte.weight":{"dtype":"F32","shape":[65,128],"data_offsets":[0,33280]},
//                          "step":{"dtype":"I64","shape":[],"data_offsets":[33280,33288]},
//                          "__metadata__":{"format":"pt"}}              (optional: string -> string)
//                       and spaces (0x20) after it, so that the data starts at a multiple of 8
//   bytes 8+N .. end    the data: each tensor's elements in row-major order, little-endian, in
//                       the bytes [begin, end) of data_offsets, counted from the start of the
//                       data (byte 8+N). end - begin = numel * element size, and the ranges tile
//                       the data exactly: no gap, no overlap, nothing after the last one.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/atomic_file.h"
#include "autograd/tensor.h"

namespace tg {

// The header's "__metadata__": string keys and values, in file order.
using SafetensorsMetadata = std::vector<std::pair<std::string, std::string>>;

// Write tensors (names unique, non-empty, not "__metadata__") and metadata to path, atomically:
// the file is written under a temporary name in the same folder, flushed to disk, then renamed
// over the target; on any error the temporary file is removed and a file already under the
// target's name is left as it was.
//
// The canonical layout it writes (tests/reference/make_safetensors_reference.py writes the same,
// so a model saved from either side has the same bytes):
//   - "__metadata__" first when there is metadata, its keys in the order given;
//   - the tensors in the order given (a state_dict's order), their data in that order, back to
//     back, and each tensor's logical values (a transposed or sliced view is saved as it reads);
//   - JSON without spaces, members in the order dtype, shape, data_offsets; strings written by
//     json::quote (only '"', '\' and control characters escaped);
//   - spaces after the JSON up to a multiple of 8 bytes of header.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const SafetensorsMetadata& metadata = {});

// The same bytes into a file being written atomically, without committing it: for several files
// that are saved together (prepare each, then commit each; see atomic_file.h).
void save_safetensors(AtomicFile& file, const NamedTensors& tensors, const SafetensorsMetadata& metadata = {});

// A tensor made when the file reaches it: its name, dtype and shape go into the header first,
// make() is called when its bytes are written, and what it returns is let go once they are. A
// file of weights widened or merged on the way out (models/hf/hf_llama.h: save_hf_llama) then
// holds one of them in memory at a time, not all of them. A made tensor of another dtype or shape
// than announced is an Error, and the file is not committed.
struct TensorToWrite {
  std::string name;
  ScalarType dtype = kFloat32;
  Shape shape;
  std::function<Tensor()> make;
};
void save_safetensors(AtomicFile& file, const std::vector<TensorToWrite>& tensors,
                      const SafetensorsMetadata& metadata = {});
// Tensors the caller holds already, as TensorToWrite: each made by handing it back.
std::vector<TensorToWrite> tensors_to_write(const NamedTensors& tensors);

// Read every tensor of the file, in header order, as new contiguous tensors (not requiring grad).
//
// dtypes: F32, F64, I64, BOOL (one byte, 0 or 1), BF16 (bfloat16's 16 bits) and F16 (IEEE half
// precision) are tapegrad's float32, float64, int64, bool, bfloat16 and float16 (float16 is a
// storage dtype: autograd/dtype.h). The caller may ask for 16-bit floats as float32
// (SafetensorsReadOptions::float16_to_float32, for checkpoints saved in half precision such as
// Hugging Face's); then F16 and BF16 tensors are both read as float32, exactly (autograd/float16.h,
// BFloat16 in autograd/dtype.h). The request is explicit so that a state_dict file of another
// dtype is never widened behind load_state_dict's back. The format's other dtypes (I32, I16, I8,
// U8, ...) are recognised and refused with an error naming the tensor, the dtype and the file.
//
// Loading checks everything before it trusts it, and reads no byte outside the file. Every
// problem is a tg::Error naming the file and the byte offset in it:
//   load_safetensors: model.safetensors: byte 45: tensor "w": dtype "Q8" is not a safetensors dtype
NamedTensors load_safetensors(const std::string& path);

struct SafetensorsReadOptions {
  // F16 and BF16 tensors read as float32 (otherwise as float16 and bfloat16).
  bool float16_to_float32 = false;
  // With float16_to_float32: the F16 and BF16 tensors for which keep_16bit(name) is true are read
  // as float16 and bfloat16 all the same (a checkpoint's matrices kept at their own size:
  // models/hf/hf_llama.h).
  std::function<bool(const std::string& name)> keep_16bit = nullptr;
  // Refuse a floating-point tensor that holds an inf or a nan (check_finite, below), each tensor
  // checked as it is read: for weights, adapters and optimizer state, where one such value makes
  // every later output nan without a word.
  bool finite_only = false;
  // Tensors for which skip(name) is true are left unread (their header entry is still checked):
  // for_each_safetensor and load_safetensors pass them over without allocating or reading a byte
  // of their data (GPT-2's ignored h.i.attn.bias buffers: up to gigabytes of a causal mask).
  std::function<bool(const std::string& name)> skip = nullptr;
  // for_each_safetensor only: the tensor to read entry `name` straight into, or an undefined one to
  // read it into a new tensor. A defined one must be contiguous, of the entry's shape and of the
  // dtype it is read as (an Error names the tensor otherwise); fn then gets that same tensor. A
  // loader of weights into a built model so holds no second copy of any (Qwen3-0.6B's embedding
  // is 622 MB as float32). With finite_only, an inf or nan is an Error after it is read in.
  std::function<Tensor(const std::string& name)> read_into = nullptr;
};
// As above, with options. converted (optional) receives the file dtypes that were converted
// ("F16", "BF16"), each once, in the order first met, so a caller can say so in one line.
NamedTensors load_safetensors(const std::string& path, const SafetensorsReadOptions& options,
                              std::vector<std::string>* converted = nullptr);

// Read only the header's metadata (the whole header is still checked).
SafetensorsMetadata load_safetensors_metadata(const std::string& path);
// What the header says of each tensor, in file order, without reading any data: its name, shape,
// the dtype it is read as (with options, as load_safetensors reads it) and the file's dtype name
// ("F32", "F16", ...). The header is checked as load_safetensors checks it.
struct SafetensorsEntry {
  std::string name;
  Shape shape;
  ScalarType dtype = kFloat32;
  std::string file_dtype;
};
std::vector<SafetensorsEntry> safetensors_entries(const std::string& path, const SafetensorsReadOptions& options = {});
// The file dtypes of these entries that are read as float32 (F16, BF16), each once, in file order:
// what load_safetensors reports as converted.
std::vector<std::string> widened_dtypes(const std::vector<SafetensorsEntry>& entries);

// Non-finite values. The reader itself reads any bits faithfully (an inf mask is a value like any
// other); a loader of weights, adapters or optimizer state asks for finite values (finite_only, or
// these two on tensors it already has, such as a checkpoint about to be saved):
//   first_nonfinite(t)          "a non-finite value (nan) at index [3, 17]": t's first element in
//                               row-major order that is inf or nan (a 0-dim tensor has no index);
//                               nullopt when there is none, and for int64 and bool tensors
//   check_finite(tensors, file) throws tg::Error for the first tensor that has one, naming file and
//                               the tensor: model.safetensors: tensor "h.0.attn.c_attn.weight" has a
//                               non-finite value (nan) at index [3, 17]
std::optional<std::string> first_nonfinite(const Tensor& t);
void check_finite(const NamedTensors& tensors, const std::string& file);

// The tensors one at a time, in file order: fn(name, tensor) gets each as soon as it is read, and
// a loader that copies it into place and lets it go never holds the whole file in memory (for
// GPT-2 124M, half a gigabyte less at its peak). Errors as load_safetensors's.
void for_each_safetensor(const std::string& path, const SafetensorsReadOptions& options,
                         const std::function<void(const std::string& name, Tensor tensor)>& fn);

}  // namespace tg
