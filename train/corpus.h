// train/corpus.h — the training program's built-in corpus: short stories the project
// writes itself from a small grammar, so a fresh machine has something to learn from without
// downloading anything; and reading the files a user hands in (their bytes, their lines).
//
// The text has the structure a small character-level model picks up within minutes: a fixed
// vocabulary of words, sentences with a subject, a verb and a place, dialogue in quotes,
// paragraphs of a few sentences. A model that has learnt it writes new sentences of the same
// kind; one that has not writes letter soup.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tg::train {

// About `bytes` characters of stories (whole paragraphs), the same for the same seed on every
// machine (the generator is a splitmix64 written here, not a library distribution).
std::string builtin_corpus(size_t bytes = 400000, uint64_t seed = 7);

// The training text of --data: the file's bytes, or the built-in corpus when path is empty.
// Errors name the flag and the file: "--data x.txt: no such file", "...: cannot read it",
// "...: the file is empty".
std::string read_data(const std::string& path);

// The bytes of an input file (not empty); errors name `flag` (may be "") and the file, as above
// (tg::read_input_file: a folder, a FIFO or a device is refused before it is opened).
std::string read_input(const std::string& path, const std::string& flag);

}  // namespace tg::train
