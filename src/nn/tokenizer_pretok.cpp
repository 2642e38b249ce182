// The pre-tokenizers of tg::nn::Tokenizer: hand-written matchers of llama.cpp's pre-tokenizer regexes
// (std::regex has no \p{L} and is slow). Each matcher returns where the match starting at a position ends,
// taking the first alternative that matches there, as a backtracking regex engine does; a position no
// alternative matches becomes a word of its own, as the unmatched text between regex matches is kept by
// both llama.cpp and Hugging Face tokenizers.
#include <algorithm>
#include <string>

#include "nn/tokenizer_internal.h"
#include "tg/error.h"

namespace tg::nn::tokenizer_detail {
namespace {

// Stands for an invalid UTF-8 byte: outside Unicode, so it equals no character a regex names.
constexpr uint32_t kInvalid = 0x110000;

bool is_cont(unsigned char b) { return (b & 0xC0) == 0x80; }

// Length of the valid UTF-8 sequence at text[i] (0 if invalid) and its code point. Overlong forms,
// surrogates and code points past U+10FFFF are invalid, as in every strict decoder.
size_t utf8_seq(std::string_view t, size_t i, uint32_t& cp) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(t[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) return cp = c, 1;
  size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
  if (n == 0 || c > 0xF4 || i + n > t.size()) return 0;
  for (size_t k = 1; k < n; k++)
    if (!is_cont(b(k))) return 0;
  if ((c == 0xE0 && b(1) < 0xA0) || (c == 0xED && b(1) >= 0xA0) || (c == 0xF0 && b(1) < 0x90) ||
      (c == 0xF4 && b(1) >= 0x90))
    return 0;
  cp = n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
  for (size_t k = 1; k < n; k++) cp = (cp << 6) | (b(k) & 0x3F);
  return n;
}

// The code points of one pre-tokenizer fragment [b, e) and the accessors the matchers use.
struct Cursor {
  const std::vector<CodePoint>& c;
  size_t e;
  uint32_t at(size_t k) const { return k < e ? c[k].cp : kInvalid; }
  bool is(size_t k, CharClass cls) const { return k < e && c[k].cls == cls; }
  size_t run(size_t k, CharClass cls) const {  // end of the run of `cls` starting at k
    while (is(k, cls)) k++;
    return k;
  }
};

// 's|'t|'re|'ve|'m|'ll|'d, optionally case-insensitive: the end of the match at i, or i.
size_t contraction(const Cursor& s, size_t i, bool any_case) {
  if (s.at(i) != '\'') return i;
  auto low = [&](size_t k) { return any_case && s.at(k) < 0x80 ? s.at(k) | 0x20 : s.at(k); };
  const uint32_t a = low(i + 1), b = low(i + 2);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
  return i;
}

// \s+(?!\S)|\s+ at i (a space): a run of spaces before a non-space leaves its last space to the next word.
size_t spaces(const Cursor& s, size_t i) {
  const size_t j = s.run(i, CharClass::Space);
  return j - i > 1 && j < s.e ? j - 1 : j;
}

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
size_t match_gpt2(const Cursor& s, size_t i) {
  if (size_t j = contraction(s, i, false); j != i) return j;
  const size_t j = i + (s.at(i) == ' ' ? 1 : 0);
  if (j < s.e && s.c[j].cls != CharClass::Space) return s.run(j, s.c[j].cls);
  return spaces(s, i);
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|
// \s+(?!\S)|\s+
size_t match_llama3(const Cursor& s, size_t i) {
  using enum CharClass;
  if (size_t j = contraction(s, i, true); j != i) return j;
  const uint32_t c = s.at(i);
  if (s.is(i, Letter)) return s.run(i, Letter);
  if (c != '\r' && c != '\n' && !s.is(i, Number) && s.is(i + 1, Letter)) return s.run(i + 1, Letter);
  if (s.is(i, Number)) return std::min(s.run(i, Number), i + 3);
  if (const size_t j = i + (c == ' ' ? 1 : 0); s.is(j, Other)) {
    size_t k = s.run(j, Other);
    while (s.at(k) == '\r' || s.at(k) == '\n') k++;
    return k;
  }
  const size_t end = s.run(i, Space);  // \s*[\r\n]+ ends after the run's last line break
  for (size_t k = end; k > i; k--)
    if (s.at(k - 1) == '\r' || s.at(k - 1) == '\n') return k;
  return spaces(s, i);
}

// Splits the fragment [b, e) with `match`, appending the words' ends (code point indices).
template <class Match>
void split(const std::vector<CodePoint>& cps, size_t b, size_t e, Match match, std::vector<size_t>& ends) {
  const Cursor s{cps, e};
  for (size_t i = b; i < e;) {
    const size_t j = match(s, i);
    i = j > i ? j : i + 1;  // every matcher consumes at least one code point; guard anyway
    ends.push_back(i);
  }
}

}  // namespace

std::vector<CodePoint> decode_utf8(std::string_view text) {
  std::vector<CodePoint> out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = kInvalid;
    size_t n = utf8_seq(text, i, cp);
    if (n == 0) cp = kInvalid, n = 1;
    out.push_back({cp, uint32_t(i), cp == kInvalid ? CharClass::Other : char_class(cp)});
    i += n;
  }
  return out;
}

PreType pre_type(std::string_view name) {
  // llama.cpp's names for the regex families (llama-vocab.cpp); anything else gets gpt2's regex.
  for (const char* n : {"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva"})
    if (name == n) return PreType::Smollm;
  for (const char* n : {"llama-bpe", "llama3", "llama-v3", "dbrx", "smaug-bpe", "falcon3", "pixtral"})
    if (name == n) return PreType::Llama3;
  return PreType::Gpt2;
}

std::vector<Span> pretokenize(std::string_view text, PreType type) {
  if (text.size() > UINT32_MAX)
    throw Error("Tokenizer::encode: text of " + std::to_string(text.size()) + " bytes, over 4 GiB");
  const std::vector<CodePoint> cps = decode_utf8(text);
  std::vector<size_t> ends;
  ends.reserve(cps.size() / 3 + 1);
  if (type == PreType::Llama3) {
    split(cps, 0, cps.size(), match_llama3, ends);
  } else if (type == PreType::Gpt2) {
    split(cps, 0, cps.size(), match_gpt2, ends);
  } else {  // Smollm: every \p{N} a word, the text between them split by gpt2's regex
    for (size_t i = 0; i < cps.size();) {
      size_t j = i;
      while (j < cps.size() && cps[j].cls != CharClass::Number) j++;
      split(cps, i, j, match_gpt2, ends);
      if (j < cps.size()) ends.push_back(j + 1);
      i = j + 1;
    }
  }
  std::vector<Span> words;
  words.reserve(ends.size());
  size_t begin = 0;
  for (size_t e : ends) {
    const size_t end = e < cps.size() ? cps[e].offset : text.size();
    words.push_back({begin, end});
    begin = end;
  }
  return words;
}

}  // namespace tg::nn::tokenizer_detail
