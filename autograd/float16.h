// autograd/float16.h — IEEE 754 half precision (float16, safetensors' "F16") widened to float32.
//
// float16 is a storage dtype of tapegrad (autograd/dtype.h: Float16): an F16 checkpoint's frozen
// weights keep their 16 bits, and the weight products and embeddings widen each element as they
// read it. Every float16 value is a float32 value, so widening is exact.
#pragma once
#include <bit>
#include <cstdint>

namespace tg {

// The float32 value of the float16 with bits `half`.
//
// The 16 bits: sign (1), exponent (5, bias 15), mantissa (10). To float32's sign (1), exponent
// (8, bias 127), mantissa (23):
//   exponent 1..30   normal (1 + m 2^-10) 2^(e - 15)
//   exponent 0       zero, or subnormal m 2^-24
//   exponent 31      mantissa 0: ±inf; otherwise NaN: its payload kept (mantissa << 13) and the
//                    quiet bit (float32 bit 22) set, as PyTorch's Tensor.to(torch.float32) gives
//                    (a signalling NaN comes out quiet; tests/reference/float16_torch.json)
// The first two in one step: exponent and mantissa shifted left by 13 are the bits of a float32
// whose value is the half's times 2^-112 (its exponent field read with bias 127, not 15, and a
// subnormal half landing on a subnormal float32), so multiplying by 2^112, exact, gives the half's
// value. No branch and no loop: a compiler vectorises it, and a weight kernel widens a row with it.
// (It assumes subnormal float32 inputs are not flushed to zero, the default on x86 and Arm.)
inline float float16_bits_to_float(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t magnitude = half & 0x7FFFu;
  const uint32_t mantissa = half & 0x3FFu;
  const uint32_t finite = std::bit_cast<uint32_t>(std::bit_cast<float>(magnitude << 13) * 0x1p112f);
  const uint32_t special = 0x7F800000u | (mantissa << 13) | (mantissa != 0 ? 0x00400000u : 0u);  // inf, nan
  return std::bit_cast<float>(sign | (magnitude >= 0x7C00u ? special : finite));
}

}  // namespace tg
