// autograd/dtype.h — the element types a tensor can hold.
#pragma once
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "autograd/float16.h"

namespace tg {

enum class ScalarType : uint8_t { Float32, Float64, Int64, Bool, BFloat16, Int8, Float16 };

inline constexpr ScalarType kFloat32 = ScalarType::Float32;  // the default dtype
inline constexpr ScalarType kFloat = ScalarType::Float32;
inline constexpr ScalarType kFloat64 = ScalarType::Float64;  // for gradient checks
inline constexpr ScalarType kDouble = ScalarType::Float64;
inline constexpr ScalarType kInt64 = ScalarType::Int64;      // token ids, targets, indices
inline constexpr ScalarType kLong = ScalarType::Int64;
inline constexpr ScalarType kBool = ScalarType::Bool;        // masks
inline constexpr ScalarType kBFloat16 = ScalarType::BFloat16;  // half the bytes of float32 (below)
// int8 is storage only: the values of a weight quantized to 8 bits (autograd/ops/quantize.cpp), which
// the quantized ops read with their scales. The other ops refuse it (loops.h: visit_dtype).
inline constexpr ScalarType kInt8 = ScalarType::Int8;
// float16 is storage only too: a checkpoint's frozen 16-bit weight (an F16 file's), kept in its own
// bytes and widened to float32 as the weight products and embeddings read it (exactly: below).
// The other ops refuse it; .to(tg::kFloat32) widens a whole tensor.
inline constexpr ScalarType kFloat16 = ScalarType::Float16;
inline constexpr ScalarType kHalf = ScalarType::Float16;

// bfloat16: the top 16 bits of a float32 (sign, the same 8 exponent bits, 7 of the 23 mantissa
// bits), so it has float32's range with about 3 significant decimal digits. A float32 becomes a
// bfloat16 by rounding to the nearest, ties to even, as PyTorch's c10::BFloat16:
//   bits = (f + 0x7FFF + (bit 16 of f)) >> 16        (on f's 32 bits)
// which also carries into the exponent (the largest floats become inf), and every NaN becomes
// 0xFFFF, a NaN, as PyTorch's vectorised conversion writes it (Tensor.to(torch.bfloat16); its
// scalar c10::BFloat16 writes 0x7FC0). Back to float32 is exact: the 16 bits, then 16 zeros.
// Arithmetic is float32's: a BFloat16 converts to float wherever it meets a number, and a
// float result is rounded when stored into one. A double goes through float first, as PyTorch's.
struct BFloat16 {
  uint16_t bits = 0;

  BFloat16() = default;
  BFloat16(float v) : bits(round_to_bits(v)) {}  // NOLINT: implicit, as a float narrows to it
  operator float() const { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }  // NOLINT

  static BFloat16 from_bits(uint16_t b) {
    BFloat16 out;
    out.bits = b;
    return out;
  }
  // Round to nearest, ties to even; every NaN becomes 0xFFFF. The NaN test is a select, not a
  // branch, so loops over it vectorise (kernels/convert_kernels.h).
  static uint16_t round_to_bits(float v) {
    const uint32_t f = std::bit_cast<uint32_t>(v);
    const auto rounded = static_cast<uint16_t>((f + 0x7FFFu + ((f >> 16) & 1u)) >> 16);
    return v != v ? uint16_t{0xFFFF} : rounded;
  }
};

// float16 (IEEE 754 half precision): sign (1 bit), exponent (5, bias 15), mantissa (10). Every
// float16 is a float32 value, so widening is exact; autograd/float16.h says how, in steps a
// compiler vectorises, and the weight kernels widen each element so as they read it.
struct Float16 {
  uint16_t bits = 0;

  static Float16 from_bits(uint16_t b) {
    Float16 out;
    out.bits = b;
    return out;
  }
  operator float() const { return float16_bits_to_float(bits); }  // NOLINT: implicit, as a bfloat16's
};

inline size_t element_size(ScalarType t) {
  switch (t) {
    case ScalarType::Float32: return 4;
    case ScalarType::Float64: return 8;
    case ScalarType::Int64: return 8;
    case ScalarType::Bool: return 1;
    case ScalarType::BFloat16: return 2;
    case ScalarType::Int8: return 1;
    case ScalarType::Float16: return 2;
  }
  return 0;
}

// "float32", "float64", "int64", "bool", "bfloat16", "int8", "float16" — as PyTorch prints them after "torch."
inline const char* dtype_name(ScalarType t) {
  switch (t) {
    case ScalarType::Float32: return "float32";
    case ScalarType::Float64: return "float64";
    case ScalarType::Int64: return "int64";
    case ScalarType::Bool: return "bool";
    case ScalarType::BFloat16: return "bfloat16";
    case ScalarType::Int8: return "int8";
    case ScalarType::Float16: return "float16";
  }
  return "?";
}

inline bool is_floating(ScalarType t) { return t == kFloat32 || t == kFloat64 || t == kBFloat16; }

// bfloat16 or float16: a checkpoint's 16-bit float, which the weight products widen as they read.
inline bool is_16bit(ScalarType t) { return t == kBFloat16 || t == kFloat16; }

// PyTorch's promotion between two tensors: the "wider" kind wins,
// bool < int8 < int64 < bfloat16 < float32 < float64.
inline int promotion_rank(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return 0;
    case ScalarType::Int8: return 1;
    case ScalarType::Int64: return 2;
    case ScalarType::BFloat16: return 3;
    case ScalarType::Float16: return 3;
    case ScalarType::Float32: return 4;
    case ScalarType::Float64: return 5;
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
template <> constexpr ScalarType dtype_of<BFloat16>() { return kBFloat16; }
template <> constexpr ScalarType dtype_of<int8_t>() { return kInt8; }
template <> constexpr ScalarType dtype_of<Float16>() { return kFloat16; }

// float, double or BFloat16: the element types that hold fractions, inf and nan.
template <class T>
inline constexpr bool is_floating_type_v = std::is_floating_point_v<T> || std::is_same_v<T, BFloat16>;

}  // namespace tg

// The limits of bfloat16, for the code that asks std::numeric_limits<T> of any element type.
template <>
class std::numeric_limits<tg::BFloat16> {
 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr int digits = 8;  // 7 stored mantissa bits and the implicit one
  static tg::BFloat16 min() { return tg::BFloat16::from_bits(0x0080); }  // smallest normal, 2^-126
  static tg::BFloat16 max() { return tg::BFloat16::from_bits(0x7F7F); }  // (2 - 2^-7) * 2^127
  static tg::BFloat16 lowest() { return tg::BFloat16::from_bits(0xFF7F); }
  static tg::BFloat16 epsilon() { return tg::BFloat16::from_bits(0x3C00); }  // 2^-7
  static tg::BFloat16 infinity() { return tg::BFloat16::from_bits(0x7F80); }
  static tg::BFloat16 quiet_NaN() { return tg::BFloat16::from_bits(0x7FC0); }
  static tg::BFloat16 denorm_min() { return tg::BFloat16::from_bits(0x0001); }
};
