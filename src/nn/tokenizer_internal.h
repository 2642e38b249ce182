#pragma once
// Internals of tg::nn::Tokenizer shared by its source files: Unicode classes and the pre-tokenizers.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace tg::nn::tokenizer_detail {

// The classes the pre-tokenizer regexes test: \p{L}, \p{N}, \s, and everything else.
enum class CharClass : uint8_t { Letter, Number, Space, Other };
CharClass char_class(uint32_t cp);

// One code point of the text: an invalid UTF-8 byte is a code point of its own, of class Other, so the
// bytes still reach the byte-level encoder unchanged.
struct CodePoint {
  uint32_t cp;
  uint32_t offset;  // byte offset in the text
  CharClass cls;
};
std::vector<CodePoint> decode_utf8(std::string_view text);

// The pre-tokenizer families of llama.cpp's llm_tokenizer_bpe that we implement.
enum class PreType : uint8_t {
  Gpt2,    // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
  Smollm,  // \p{N} split off first, then Gpt2's regex (smollm, starcoder, refact, command-r, ...)
  Llama3,  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|...
};
PreType pre_type(std::string_view name);

// Splits `text` into words; each word is [begin, end) in bytes, words cover the text in order.
struct Span {
  size_t begin, end;
};
std::vector<Span> pretokenize(std::string_view text, PreType type);

}  // namespace tg::nn::tokenizer_detail
