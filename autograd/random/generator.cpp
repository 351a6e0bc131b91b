// autograd/random/generator.cpp — the MT19937 engine and the get_state / set_state byte layout.
//
// Floating point: this file and random_kernels.cpp must be compiled with -ffp-contract=off (the
// whole project is, see the top-level CMakeLists.txt). PyTorch's AVX2 kernels fuse some
// multiply-adds and not others; to get the same bits we write each fused one as std::fma /
// std::fmaf and need the compiler to leave every other a*b+c as two roundings. Only the
// Box-Muller cache here holds a double; nothing in this file does arithmetic on floats.
#include "autograd/random/generator.h"
#include "autograd/error.h"

#include <bit>
#include <string>

namespace tg {
namespace {

// MT19937 parameters (Matsumoto and Nishimura, 1998).
constexpr int kShift = 397;                   // m: the word the recurrence mixes in
constexpr uint32_t kMatrixA = 0x9908B0DFu;    // the twist matrix's last row
constexpr uint32_t kUpperMask = 0x80000000u;  // the top bit of word i ...
constexpr uint32_t kLowerMask = 0x7FFFFFFFu;  // ... joined with the low 31 bits of word i+1
constexpr uint32_t kSeedMultiplier = 1812433253u;  // init_genrand's multiplier

// Byte offsets of torch.get_rng_state()'s struct (see generator.h).
constexpr size_t kOffSeed = 0;
constexpr size_t kOffLeft = 8;
constexpr size_t kOffSeeded = 12;
constexpr size_t kOffNext = 16;
constexpr size_t kOffWords = 24;
constexpr size_t kOffNormalX = kOffWords + 8 * Generator::kStateWords;  // 5016
constexpr size_t kOffNormalY = kOffNormalX + 8;
constexpr size_t kOffNormalRho = kOffNormalY + 8;
constexpr size_t kOffNormalValid = kOffNormalRho + 8;  // 5040
constexpr size_t kOffFloatNormal = kOffNormalValid + 4;
constexpr size_t kOffFloatValid = kOffFloatNormal + 4;  // 5048, then 7 bytes of padding
static_assert(kOffFloatValid + 1 + 7 == Generator::kStateBytes);

// Little-endian readers and writers, one byte at a time so they do not depend on the host.
void put_u64(std::vector<uint8_t>& out, size_t offset, uint64_t v) {
  for (int i = 0; i < 8; ++i) out[offset + i] = static_cast<uint8_t>(v >> (8 * i));
}
void put_u32(std::vector<uint8_t>& out, size_t offset, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[offset + i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t get_u64(std::span<const uint8_t> in, size_t offset) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(in[offset + i]) << (8 * i);
  return v;
}
uint32_t get_u32(std::span<const uint8_t> in, size_t offset) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(in[offset + i]) << (8 * i);
  return v;
}

[[noreturn]] void bad_state(const std::string& what) {
  throw Error("Generator::set_state: " + what);
}

}  // namespace

void Generator::manual_seed(uint64_t seed) {
  seed_ = seed;
  // init_genrand: word 0 is the seed's low 32 bits; each next word scrambles the previous one.
  // uint32_t arithmetic wraps mod 2^32, which is what the recurrence asks for.
  state_[0] = static_cast<uint32_t>(seed);
  for (int i = 1; i < kStateWords; ++i) {
    uint32_t prev = state_[i - 1];
    state_[i] = kSeedMultiplier * (prev ^ (prev >> 30)) + static_cast<uint32_t>(i);
  }
  // left = 1 means "the very next draw twists first" (PyTorch's convention).
  left_ = 1;
  next_ = 0;
  next_double_normal_.reset();
  next_float_normal_.reset();
}

void Generator::twist() {
  // word[i] = word[i+m] XOR A(upper bit of word[i] | lower 31 bits of word[i+1]), where
  // A(y) = y >> 1, XORed with MATRIX_A when y is odd. Indices wrap around mod 624, and words
  // before i are already the new ones, as the recurrence requires.
  for (int i = 0; i < kStateWords; ++i) {
    uint32_t y = (state_[i] & kUpperMask) | (state_[(i + 1) % kStateWords] & kLowerMask);
    uint32_t mixed = (y >> 1) ^ ((y & 1u) ? kMatrixA : 0u);
    state_[i] = state_[(i + kShift) % kStateWords] ^ mixed;
  }
  left_ = kStateWords;
  next_ = 0;
}

uint32_t Generator::random() {
  if (--left_ == 0) twist();
  uint32_t y = state_[next_++];
  // Tempering: a fixed invertible bit mix that improves the equidistribution of the output.
  y ^= y >> 11;
  y ^= (y << 7) & 0x9D2C5680u;
  y ^= (y << 15) & 0xEFC60000u;
  y ^= y >> 18;
  return y;
}

uint64_t Generator::random64() {
  uint64_t high = random();
  uint64_t low = random();
  return (high << 32) | low;
}

std::vector<uint8_t> Generator::get_state() const {
  std::vector<uint8_t> out(kStateBytes, 0);
  put_u64(out, kOffSeed, seed_);
  put_u32(out, kOffLeft, static_cast<uint32_t>(left_));
  put_u32(out, kOffSeeded, 1);
  put_u64(out, kOffNext, static_cast<uint64_t>(next_));
  for (int i = 0; i < kStateWords; ++i) put_u64(out, kOffWords + 8 * i, state_[i]);
  // normal_x and normal_rho stay 0, as torch writes them.
  if (next_double_normal_) {
    put_u64(out, kOffNormalY, std::bit_cast<uint64_t>(*next_double_normal_));
    put_u32(out, kOffNormalValid, 1);
  }
  if (next_float_normal_) {
    put_u32(out, kOffFloatNormal, std::bit_cast<uint32_t>(*next_float_normal_));
    out[kOffFloatValid] = 1;
  }
  return out;
}

void Generator::set_state(std::span<const uint8_t> bytes) {
  if (bytes.size() != kStateBytes) {
    bad_state("expected " + std::to_string(kStateBytes) +
              " bytes (the layout of torch.get_rng_state() in PyTorch 1.13), got " +
              std::to_string(bytes.size()));
  }
  int32_t left = static_cast<int32_t>(get_u32(bytes, kOffLeft));
  int32_t seeded = static_cast<int32_t>(get_u32(bytes, kOffSeeded));
  uint64_t next = get_u64(bytes, kOffNext);
  uint32_t normal_valid = get_u32(bytes, kOffNormalValid);
  uint8_t float_valid = bytes[kOffFloatValid];

  if (seeded != 1) bad_state("field 'seeded' (byte 12) must be 1, got " + std::to_string(seeded));
  if (left < 1 || left > kStateWords) {
    bad_state("field 'left' (byte 8) must be in [1, 624], got " + std::to_string(left));
  }
  // The draws before the next twist read words next .. next+left-2, which must exist.
  if (next > static_cast<uint64_t>(kStateWords + 1 - left)) {
    bad_state("field 'next' (byte 16) must be at most 625 - left = " +
              std::to_string(kStateWords + 1 - left) + ", got " + std::to_string(next));
  }
  for (int i = 0; i < kStateWords; ++i) {
    uint64_t word = get_u64(bytes, kOffWords + 8 * i);
    if (word > 0xFFFFFFFFu) {
      bad_state("state word " + std::to_string(i) + " (byte " + std::to_string(kOffWords + 8 * i) +
                ") does not fit in 32 bits: " + std::to_string(word));
    }
  }
  if (normal_valid > 1) {
    bad_state("field 'normal_is_valid' (byte 5040) must be 0 or 1, got " +
              std::to_string(normal_valid));
  }
  if (float_valid > 1) {
    bad_state("field 'next_float_normal_is_valid' (byte 5048) must be 0 or 1, got " +
              std::to_string(float_valid));
  }

  // Everything checked: now change the generator.
  seed_ = get_u64(bytes, kOffSeed);
  left_ = left;
  next_ = static_cast<int>(next);
  for (int i = 0; i < kStateWords; ++i) {
    state_[i] = static_cast<uint32_t>(get_u64(bytes, kOffWords + 8 * i));
  }
  next_double_normal_.reset();
  if (normal_valid) next_double_normal_ = std::bit_cast<double>(get_u64(bytes, kOffNormalY));
  next_float_normal_.reset();
  if (float_valid) next_float_normal_ = std::bit_cast<float>(get_u32(bytes, kOffFloatNormal));
}

Generator& default_generator() {
  static Generator gen;
  return gen;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace tg
