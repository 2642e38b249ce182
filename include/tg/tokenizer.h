#pragma once
// tg::nn::Tokenizer: the byte-level BPE tokenizer (GPT-2 style, tokenizer.ggml.model "gpt2") that a GGUF
// file carries in its metadata, encoding as llama.cpp and Hugging Face tokenizers do for the same model:
//
//   auto f = tg::nn::state::gguf_load("SmolLM2-135M-Instruct.Q4_1.gguf");
//   auto tok = tg::nn::Tokenizer::from_gguf(f);
//   std::vector<int32_t> ids = tok.encode("<|im_start|>user\nHi<|im_end|>\n");
//   std::string text = tok.decode(ids);
//
// Encoding: the text is split around special tokens (control, unknown and user-defined tokens written
// verbatim in the text), each remaining piece is pre-tokenized with the regex llama.cpp uses for
// tokenizer.ggml.pre ("gpt2", "smollm" and its family, "llama-bpe" and its family; an unknown name uses
// gpt2's), the bytes of each word are mapped through GPT-2's bytes_to_unicode table and merged by
// tokenizer.ggml.merges, lowest rank first. Any byte string is accepted: invalid UTF-8 is encoded byte by
// byte. A byte whose token the vocabulary lacks is dropped, as llama.cpp and Hugging Face tokenizers do
// (SmolLM2's vocabulary has no token for 21 bytes, e.g. 0x04 and 0xFF), so only text made of bytes the
// vocabulary has decodes back to itself.
//
// Unicode classes (\p{L}, \p{N}, \s) come from a table generated from Unicode 14.0 (Python's unicodedata);
// an engine built on another Unicode version may classify newly assigned code points differently.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tg/state.h"

namespace tg::nn {

class Tokenizer {
 public:
  // Builds the tokenizer from the metadata of a GGUF file (tensors are not read). tokenizer.ggml.model must
  // be "gpt2"; tokenizer.ggml.tokens and tokenizer.ggml.merges are required; tokenizer.ggml.token_type,
  // bos/eos ids, add_bos_token, pre and tokenizer.chat_template are optional. A missing or malformed
  // key throws tg::Error naming it.
  static Tokenizer from_gguf(const tg::nn::state::GGUFFile& f);
  // GPT-2's own files (Hugging Face's vocab.json and merges.txt): the same byte-level BPE with GPT-2's
  // pre-tokenizer; <|endoftext|> (when present) is the bos and eos token and parsed as special. A missing file, a
  // malformed vocabulary (ids not 0..n-1 once each) or merge line throws tg::Error naming it.
  static Tokenizer from_gpt2_files(const std::string& vocab_json, const std::string& merges_txt);

  // Token ids of `text`. add_bos prepends bos_id() (when the file has one). parse_special: control and
  // unknown tokens written in the text map to their id; when false they are encoded as plain text.
  // User-defined tokens are always matched, as in llama.cpp.
  std::vector<int32_t> encode(std::string_view text, bool add_bos = false, bool parse_special = true) const;
  // The bytes the tokens stand for, concatenated; special tokens give their text. An id out of range throws
  // tg::Error naming it.
  std::string decode(const std::vector<int32_t>& ids) const;
  // The bytes of one token, for streaming output: a UTF-8 character may be split across tokens, so the
  // caller joins bytes before printing whole characters.
  std::string token_bytes(int32_t id) const;

  int32_t bos_id() const;                    // -1 when the file has none
  int32_t eos_id() const;                    // -1 when the file has none
  bool add_bos() const;                      // tokenizer.ggml.add_bos_token (false when absent)
  const std::string& chat_template() const;  // tokenizer.chat_template, empty when absent
  const std::string& pre() const;            // tokenizer.ggml.pre as given ("" when absent)
  int32_t vocab_size() const;
  // The id of a vocabulary entry, as stored in the file (byte-encoded: " the" is "Ġthe").
  std::optional<int32_t> token_id(std::string_view piece) const;

  struct Impl;

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;  // immutable once built, so copies share it
};

}  // namespace tg::nn
