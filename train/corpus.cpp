// train/corpus.cpp — a grammar that writes small stories, the training text (--data or the
// stories), and the lines of a user's text file.
#include "train/corpus.h"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "autograd/error.h"
#include "io/user_file.h"

namespace tg::train {

namespace {

// splitmix64: a tiny, fully specified generator, so the corpus is identical everywhere.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // one of the n choices (n is small, so the modulo bias is negligible)
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }
  template <class List>
  std::string_view pick(const List& list) { return list[below(list.size())]; }
};

constexpr std::array<std::string_view, 12> kWho = {
    "the old fox", "a small bird", "the tired king", "my sister", "the red robot", "a young sailor",
    "the baker",   "an owl",       "the queen",      "our dog",   "the gardener", "a quiet child"};
constexpr std::array<std::string_view, 10> kDoes = {
    "walks to", "looks at", "dreams of", "sings about", "runs past", "waits by", "paints", "remembers",
    "sails to", "listens to"};
constexpr std::array<std::string_view, 12> kWhat = {
    "the river", "a quiet town", "the silver moon", "the green hill", "an open door", "the sea",
    "the garden", "a lost boat",  "the tall tower",  "the market",    "a warm fire",  "the stars"};
constexpr std::array<std::string_view, 6> kWhen = {"", " at night", " in the morning", " again", " every day",
                                                   " before the rain"};
constexpr std::array<std::string_view, 6> kAsks = {"where is", "who saw", "why do you love", "can we find",
                                                   "what lies beyond", "when will we see"};
constexpr std::array<std::string_view, 5> kSays = {"said", "asked", "whispered", "laughed", "called"};
constexpr std::array<std::string_view, 5> kFeels = {"happy", "sleepy", "brave", "hungry", "far from home"};

std::string capitalised(std::string_view s) {
  std::string out(s);
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 'a' + 'A');
  return out;
}

// Joins the pieces (plain appends: one buffer, no temporaries per '+').
std::string join(std::initializer_list<std::string_view> pieces) {
  std::string out;
  for (std::string_view p : pieces) out.append(p);
  return out;
}

// One sentence of one of three shapes: a statement, a line of dialogue, a feeling.
std::string sentence(SplitMix64& rng) {
  const std::string_view who = rng.pick(kWho);
  switch (rng.below(4)) {
    case 0:  // "Where is the sea?" asked the baker.
      return join({"\"", capitalised(rng.pick(kAsks)), " ", rng.pick(kWhat), "?\" ", rng.pick(kSays), " ", who, "."});
    case 1:  // The owl is brave, so the owl walks to the river.
      return join({capitalised(who), " is ", rng.pick(kFeels), ", so ", who, " ", rng.pick(kDoes), " ",
                   rng.pick(kWhat), "."});
    default:  // The queen paints the stars at night.
      return join({capitalised(who), " ", rng.pick(kDoes), " ", rng.pick(kWhat), rng.pick(kWhen), "."});
  }
}

}  // namespace

std::string builtin_corpus(size_t bytes, uint64_t seed) {
  SplitMix64 rng{seed};
  std::string text;
  text.reserve(bytes + 512);
  while (text.size() < bytes) {
    const size_t sentences = 2 + rng.below(4);  // a paragraph: 2 to 5 sentences
    for (size_t i = 0; i < sentences; ++i) {
      if (i > 0) text += ' ';
      text += sentence(rng);
    }
    text += "\n\n";
  }
  return text;
}

std::string read_data(const std::string& path) { return path.empty() ? builtin_corpus() : read_input(path, "--data"); }

std::string read_input(const std::string& path, const std::string& flag) {
  return read_input_file(path, flag.empty() ? path : flag + " " + path);
}

}  // namespace tg::train
