// autograd/generator.h — the random-number Generator: PyTorch's CPU generator, bit for bit.
//
// The engine is the 32-bit Mersenne Twister (std::mt19937) seeded with the low 32 bits of the
// 64-bit seed; random64() joins two draws, the first one as the high half. The generator also
// keeps one cached double normal (the second value of a Box-Muller pair), which
// manual_seed clears.
#pragma once
#include <cstdint>
#include <optional>
#include <random>

namespace tg {

class Generator {
 public:
  static constexpr uint64_t kDefaultSeed = 67280421310721ULL;  // torch.Generator()'s seed

  explicit Generator(uint64_t seed = kDefaultSeed) { manual_seed(seed); }

  // Re-seed the engine (low 32 bits of seed) and clear the cached normal.
  void manual_seed(uint64_t seed) {
    seed_ = seed;
    engine_.seed(static_cast<uint32_t>(seed));
    next_double_normal_.reset();
  }
  uint64_t initial_seed() const { return seed_; }

  uint32_t random() { return static_cast<uint32_t>(engine_()); }
  uint64_t random64() {
    uint64_t hi = random();
    uint64_t lo = random();
    return (hi << 32) | lo;
  }

  std::optional<double>& next_double_normal() { return next_double_normal_; }

 private:
  uint64_t seed_ = kDefaultSeed;
  std::mt19937 engine_;
  std::optional<double> next_double_normal_;
};

// The process-wide default generator (used when an op is given none).
Generator& default_generator();
// Seed the default generator, as torch.manual_seed(s). Negative seeds wrap to uint64.
void manual_seed(uint64_t seed);

}  // namespace tg
