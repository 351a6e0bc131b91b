// autograd/float16.h — IEEE 754 half precision (float16, safetensors' "F16") read as float32.
//
// float16 is not a tensor dtype of tapegrad: it only comes in files (Hugging Face checkpoints),
// and load_safetensors converts it to float32 when asked (nn/safetensors.h). Every
// float16 value is a float32 value, so the conversion is exact. bfloat16, which tapegrad has as
// a dtype, converts in autograd/dtype.h (BFloat16's operator float).
#pragma once
#include <bit>
#include <cstdint>

namespace tg {

// The float32 value of the float16 with bits `half`.
//
// The 16 bits: sign (1), exponent (5, bias 15), mantissa (10). To float32's sign (1), exponent
// (8, bias 127), mantissa (23):
//   exponent 1..30   normal: exponent + 112 (= 127 - 15), mantissa << 13
//   exponent 0       zero (mantissa 0): a signed zero; subnormal: mantissa * 2^-24, which is a
//                    normal float32: shift the mantissa left until its top bit reaches bit 10
//                    (that bit becomes the implicit one), one exponent step down per shift
//   exponent 31      mantissa 0: ±inf; otherwise NaN: its payload kept (mantissa << 13) and the
//                    quiet bit (float32 bit 22) set, as PyTorch's Tensor.to(torch.float32) gives
//                    (a signalling NaN comes out quiet; tests/reference/float16_torch.json)
inline float float16_bits_to_float(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1Fu;
  uint32_t mantissa = half & 0x3FFu;
  uint32_t bits;
  if (exponent == 0x1F) {
    bits = sign | 0x7F800000u | (mantissa ? 0x00400000u : 0u) | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {
    uint32_t float_exponent = 113;  // 2^-14, float16's smallest normal exponent, before the shifts
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --float_exponent;
    }
    bits = sign | (float_exponent << 23) | ((mantissa & 0x3FFu) << 13);
  }
  return std::bit_cast<float>(bits);
}

}  // namespace tg
