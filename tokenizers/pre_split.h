// tokenizers/pre_split.h — GPT-2's pre-split: the text cut into chunks that BPE merges never
// cross, exactly the matches of GPT-2's pattern, tried in order at each position:
//
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// and the pattern of Llama 3 and Qwen2 (llama3_chunk_length, below). The matcher is written out
// by hand, without a regex library: read chunk_length in pre_split.cpp first.
#pragma once
#include <cstddef>
#include <string_view>
#include <vector>

namespace tg::tokenizers {

// Two readings of GPT-2's pattern share one matcher (pre_split.cpp), which differ only in what a
// character and its class are:
//   gpt2_split          the real pattern over the code points of UTF-8 text (Hugging Face's and
//                       tiktoken's GPT-2): \p{L}, \p{N} and \s (Unicode White_Space) from
//                       unicode_classes.h. A byte that starts no well-formed UTF-8 sequence (RFC
//                       3629, as json::decode_utf8_at) is a character of its own in the "other"
//                       class, so any bytes split, and the chunks put together give them back.
//                       GPT-2 itself never sees such bytes (it reads Python strings).
//   byte_split          tapegrad's own BPE ("gpt2-bytes", bpe.h): the pattern on bytes, as
//                       Python's re on bytes, with every byte >= 0x80 a letter and \s the six
//                       bytes \t \n \v \f \r ' '.
//
// The length in bytes of the chunk that starts at text[i] (i < text.size()).
size_t gpt2_chunk_length(std::string_view text, size_t i);
size_t byte_chunk_length(std::string_view text, size_t i);

// Llama 3's and Qwen2's pattern (Hugging Face tokenizer.json's Split pre-tokenizer; Qwen2 and
// Qwen3 take one digit at a time where Llama 3 takes up to three):
//
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// llama3_chunk_length reads it over UTF-8 code points with the same classes as gpt2_split.
// max_digits 3 is Llama 3's \p{N}{1,3}, 1 Qwen2's \p{N}.
size_t llama3_chunk_length(std::string_view text, size_t i, int max_digits);

// All chunks (views into text), in order.
std::vector<std::string_view> gpt2_split(std::string_view text);
std::vector<std::string_view> byte_split(std::string_view text);

}  // namespace tg::tokenizers
