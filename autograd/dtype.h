// autograd/dtype.h — the element types a tensor can hold.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace tg {

enum class ScalarType : uint8_t { Float32, Float64, Int64, Bool };

inline constexpr ScalarType kFloat32 = ScalarType::Float32;  // the default dtype
inline constexpr ScalarType kFloat = ScalarType::Float32;
inline constexpr ScalarType kFloat64 = ScalarType::Float64;  // for gradient checks
inline constexpr ScalarType kDouble = ScalarType::Float64;
inline constexpr ScalarType kInt64 = ScalarType::Int64;      // token ids, targets, indices
inline constexpr ScalarType kLong = ScalarType::Int64;
inline constexpr ScalarType kBool = ScalarType::Bool;        // masks

inline size_t element_size(ScalarType t) {
  switch (t) {
    case ScalarType::Float32: return 4;
    case ScalarType::Float64: return 8;
    case ScalarType::Int64: return 8;
    case ScalarType::Bool: return 1;
  }
  return 0;
}

// "float32", "float64", "int64", "bool" — as PyTorch prints them after "torch."
inline const char* dtype_name(ScalarType t) {
  switch (t) {
    case ScalarType::Float32: return "float32";
    case ScalarType::Float64: return "float64";
    case ScalarType::Int64: return "int64";
    case ScalarType::Bool: return "bool";
  }
  return "?";
}

inline bool is_floating(ScalarType t) { return t == kFloat32 || t == kFloat64; }

// PyTorch's promotion between two tensors: the "wider" kind wins, bool < int64 < float32 < float64.
inline int promotion_rank(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return 0;
    case ScalarType::Int64: return 1;
    case ScalarType::Float32: return 2;
    case ScalarType::Float64: return 3;
  }
  return 0;
}
inline ScalarType promote_types(ScalarType a, ScalarType b) {
  return promotion_rank(a) >= promotion_rank(b) ? a : b;
}

// C++ type for a dtype, and back.
template <class T> constexpr ScalarType dtype_of();
template <> constexpr ScalarType dtype_of<float>() { return kFloat32; }
template <> constexpr ScalarType dtype_of<double>() { return kFloat64; }
template <> constexpr ScalarType dtype_of<int64_t>() { return kInt64; }
template <> constexpr ScalarType dtype_of<bool>() { return kBool; }

}  // namespace tg
