// autograd/random/generator.h — the random-number Generator: PyTorch 1.13's CPU generator, bit for bit.
//
// What a Generator holds (§1 in autograd/random/random_kernels.h):
//   1. a 32-bit Mersenne Twister (MT19937): 624 state words, a read position `next` and a
//      countdown `left` of draws until the block must be regenerated ("twisted");
//   2. next_double_normal: the second value of the last Box-Muller pair, waiting to be used
//      (random_kernels.cpp, normal_scalar);
//   3. a cached float normal, which no CPU kernel reads or writes; it is only carried along so
//      that a state saved by PyTorch round-trips unchanged.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "autograd/error.h"

namespace tg {

// A Generator is a plain value: copying one saves its whole state (engine and caches), and
// assigning the copy back restores it. It is not thread-safe; share one across threads only
// behind a lock.
class Generator {
 public:
  static constexpr uint64_t kDefaultSeed = 67280421310721ULL;  // torch.Generator()'s seed
  static constexpr int kStateWords = 624;                       // MT19937's n
  static constexpr size_t kStateBytes = 5056;                   // len(torch.get_rng_state())

  explicit Generator(uint64_t seed = kDefaultSeed) { manual_seed(seed); }

  // Re-seed the engine (low 32 bits of seed) and clear both cached normals. A negative
  // Python seed arrives here wrapped to uint64 (-1 is 2^64 - 1), as torch.manual_seed does.
  //
  // Seeding takes the low 32 bits of the 64-bit seed (seeds 5 and 5 + 2^32 give the same stream),
  // and, as in PyTorch, the first draw after seeding twists the block. The stream is therefore
  // exactly std::mt19937 constructed with uint32_t(seed). We write the engine out ourselves so its
  // state can be read and written in torch.get_rng_state()'s byte layout.
  void manual_seed(uint64_t seed);
  // The full 64-bit seed given to the last manual_seed (torch.initial_seed()).
  uint64_t initial_seed() const { return seed_; }

  // One tempered 32-bit engine output.
  uint32_t random();
  // Two engine outputs a then b, joined as (a << 32) | b: the first draw is the high half.
  uint64_t random64();

  // The Box-Muller cache (§4 in random_kernels.h): an unscaled standard normal, or empty.
  std::optional<double>& next_double_normal() { return next_double_normal_; }
  const std::optional<double>& next_double_normal() const { return next_double_normal_; }

  // The whole state as torch.get_rng_state() lays it out (little-endian, kStateBytes bytes):
  //   offset 0     uint64 seed          offset 8    int32 left        offset 12  int32 seeded (1)
  //   offset 16    uint64 next          offset 24   uint64 state[624] (32-bit words widened)
  //   offset 5016  double normal_x      offset 5024 double normal_y   offset 5032 double normal_rho
  //   offset 5040  int32 normal_is_valid
  //   offset 5044  float next_float_normal             offset 5048 bool next_float_normal_is_valid
  //   offset 5049..5055 padding (zero)
  // normal_y holds the cached double normal; normal_x and normal_rho are written as 0.
  std::vector<uint8_t> get_state() const;
  // Load a state in the same layout (for example one saved by torch). Checks the size and
  // every field, and throws tg::Error naming the field and its value if one is
  // wrong; on a throw the generator is left unchanged.
  void set_state(std::span<const uint8_t> bytes);

  // Read-only views of the engine, for tests and for the curious.
  const std::array<uint32_t, kStateWords>& state_words() const { return state_; }
  // left counts down by one per draw; the draw that brings it to 0 first twists the block and
  // resets left to 624 and next to 0. next is the index of the word that draw then reads.
  int left() const { return left_; }
  int next_index() const { return next_; }

 private:
  // Regenerate all 624 words from the current ones (the MT19937 recurrence).
  void twist();

  uint64_t seed_ = kDefaultSeed;
  std::array<uint32_t, kStateWords> state_{};
  int left_ = 1;
  int next_ = 0;
  std::optional<double> next_double_normal_;
  std::optional<float> next_float_normal_;
};

// The process-wide default generator (used when an op is given none).
Generator& default_generator();
// Seed the default generator, as torch.manual_seed(s). Negative seeds wrap to uint64.
void manual_seed(uint64_t seed);

}  // namespace tg
