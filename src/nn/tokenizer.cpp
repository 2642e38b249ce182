// tg::nn::Tokenizer: byte-level BPE from a GGUF file's metadata (see tg/tokenizer.h). Merges work on ids
// rather than strings: every string a merge names gets an id (vocabulary ids first, then ids past the
// vocabulary for strings it lacks), so merging a word is a hash lookup per pair.
#include "tg/tokenizer.h"

#include <array>
#include <queue>
#include <unordered_map>

#include "nn/tokenizer_internal.h"
#include "tg/error.h"

namespace tg::nn {

using state::GGUFFile;
using state::GGUFValue;
using namespace tokenizer_detail;  // NOLINT

namespace {

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum TokenType : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

struct Merge {
  int32_t rank, result;
};
uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

void append_utf8(std::string& s, uint32_t cp) {
  if (cp < 0x80) {
    s += char(cp);
  } else if (cp < 0x800) {
    s += char(0xC0 | (cp >> 6)), s += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += char(0xE0 | (cp >> 12)), s += char(0x80 | ((cp >> 6) & 0x3F)), s += char(0x80 | (cp & 0x3F));
  } else {
    s += char(0xF0 | (cp >> 18)), s += char(0x80 | ((cp >> 12) & 0x3F));
    s += char(0x80 | ((cp >> 6) & 0x3F)), s += char(0x80 | (cp & 0x3F));
  }
}

// GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the other 68 bytes for U+0100..
// in byte order, so every byte is a visible character in the vocabulary ("Ġ" is the space).
std::array<uint32_t, 256> byte_to_cp() {
  std::array<uint32_t, 256> t{};
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; b++) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    t[b] = printable ? b : next++;
  }
  return t;
}

// ---- reading the metadata ----
const GGUFValue* find(const GGUFFile& f, const std::string& key) {
  auto it = f.kv.find(key);
  return it == f.kv.end() ? nullptr : &it->second;
}

const GGUFValue& need(const GGUFFile& f, const std::string& key) {
  if (const GGUFValue* v = find(f, key)) return *v;
  throw Error("Tokenizer::from_gguf: the file has no key " + key);
}

// Runs `read` and names `key` in the tg::Error a malformed value throws.
template <class F>
auto read_key(const std::string& key, F&& read) {
  try {
    return read();
  } catch (const Error& e) {
    throw Error("Tokenizer::from_gguf: key " + key + ": " + e.what());
  }
}

std::vector<std::string> read_strings(const GGUFFile& f, const std::string& key) {
  const GGUFValue& v = need(f, key);
  return read_key(key, [&] {
    std::vector<std::string> out;
    for (const GGUFValue& s : v.as_array()) out.push_back(s.as_string());
    return out;
  });
}

// An optional token id: -1 when absent; an id outside the vocabulary is an error.
int32_t read_id(const GGUFFile& f, const std::string& key, size_t n_vocab) {
  const GGUFValue* v = find(f, key);
  if (!v) return -1;
  const int64_t id = read_key(key, [&] { return v->as_int(); });
  if (id < 0 || uint64_t(id) >= n_vocab)
    throw Error("Tokenizer::from_gguf: key " + key + " = " + std::to_string(id) + " is outside the vocabulary of " +
                std::to_string(n_vocab) + " tokens");
  return int32_t(id);
}

}  // namespace

struct Tokenizer::Impl {
  std::vector<std::string> text;                 // tokens as stored (byte-encoded)
  std::vector<std::string> bytes;                // what each token decodes to
  std::vector<int32_t> type;                     // TokenType
  std::unordered_map<std::string, int32_t> ids;  // text -> id, then merge strings the vocabulary lacks
  std::unordered_map<uint64_t, Merge> merges;    // (left id, right id) -> rank and merged id
  std::array<int32_t, 256> byte_id{};            // id of each single byte's string (maybe past the vocabulary)
  std::array<std::vector<int32_t>, 256> special_by_first;  // special tokens by first byte, longest first
  int32_t bos = -1, eos = -1;
  bool add_bos = false;
  std::string chat_template, pre;
  PreType pre_type = PreType::Gpt2;
  int32_t next_id = 0;  // the id intern gives the next string the vocabulary lacks

  int32_t n_vocab() const { return int32_t(text.size()); }
  int32_t intern(const std::string& s);
  void load_vocab(const GGUFFile& f);
  void load_merges(const GGUFFile& f);
  void load_specials();
  std::string token_bytes(int32_t id) const;

  int32_t special_at(std::string_view text, size_t i, bool parse_special, size_t& len) const;
  void encode_plain(std::string_view piece, std::vector<int32_t>& out) const;
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;
};

int32_t Tokenizer::Impl::intern(const std::string& s) {
  auto [it, added] = ids.try_emplace(s, next_id);
  if (added) next_id++;
  return it->second;
}

void Tokenizer::Impl::load_vocab(const GGUFFile& f) {
  text = read_strings(f, "tokenizer.ggml.tokens");
  if (text.empty()) throw Error("Tokenizer::from_gguf: key tokenizer.ggml.tokens is empty");
  if (text.size() > size_t(INT32_MAX / 2)) throw Error("Tokenizer::from_gguf: key tokenizer.ggml.tokens too long");
  type.assign(text.size(), kNormal);
  if (const GGUFValue* v = find(f, "tokenizer.ggml.token_type")) {
    read_key("tokenizer.ggml.token_type", [&] {
      const auto& a = v->as_array();
      if (a.size() != text.size())
        throw Error("has " + std::to_string(a.size()) + " entries for " + std::to_string(text.size()) + " tokens");
      for (size_t i = 0; i < a.size(); i++) type[i] = int32_t(a[i].as_int());
      return 0;
    });
  }
  ids.reserve(text.size() * 2);
  for (size_t i = 0; i < text.size(); i++) ids[text[i]] = int32_t(i);  // a repeated string: the last id, as llama.cpp
  next_id = n_vocab();
  bytes.resize(text.size());
  for (size_t i = 0; i < text.size(); i++) bytes[i] = token_bytes(int32_t(i));
}

void Tokenizer::Impl::load_merges(const GGUFFile& f) {
  const std::array<uint32_t, 256> cps = byte_to_cp();
  for (int b = 0; b < 256; b++) {
    std::string s;
    append_utf8(s, cps[b]);
    byte_id[b] = intern(s);
  }
  const std::vector<std::string> list = read_strings(f, "tokenizer.ggml.merges");
  merges.reserve(list.size());
  for (size_t r = 0; r < list.size(); r++) {
    const std::string& m = list[r];
    const size_t sp = m.find(' ', 1);  // from 1: a token may itself be " " in a non-GPT-2 encoding
    if (sp == std::string::npos || sp + 1 >= m.size())
      throw Error("Tokenizer::from_gguf: key tokenizer.ggml.merges[" + std::to_string(r) + "] = \"" + m +
                  "\" is not two tokens separated by a space");
    const int32_t a = intern(m.substr(0, sp)), b = intern(m.substr(sp + 1)),
                  ab = intern(m.substr(0, sp) + m.substr(sp + 1));
    merges.try_emplace(pair_key(a, b), Merge{int32_t(r), ab});  // a repeated pair keeps its first rank
  }
}

void Tokenizer::Impl::load_specials() {
  for (int32_t id = 0; id < n_vocab(); id++) {
    const int32_t t = type[size_t(id)];
    if ((t == kControl || t == kUnknown || t == kUserDefined) && !text[size_t(id)].empty())
      special_by_first[uint8_t(text[size_t(id)][0])].push_back(id);
  }
  for (auto& v : special_by_first)
    std::stable_sort(v.begin(), v.end(), [&](int32_t a, int32_t b) { return text[a].size() > text[b].size(); });
}

std::string Tokenizer::Impl::token_bytes(int32_t id) const {
  const std::string& s = text[size_t(id)];
  const int32_t t = type[size_t(id)];
  if (t == kControl || t == kUnknown || t == kUserDefined) return s;
  if (t == kByte && s.size() == 6 && s.starts_with("<0x") && s.back() == '>') {  // sentencepiece-style <0x0A>
    auto hex = [](char c) {
      return c >= '0' && c <= '9' ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10 : -1;
    };
    if (hex(s[3]) >= 0 && hex(s[4]) >= 0) return std::string(1, char(hex(s[3]) * 16 + hex(s[4])));
  }
  static const std::array<int16_t, 324> inverse = [] {
    std::array<int16_t, 324> inv;
    inv.fill(-1);
    const std::array<uint32_t, 256> cps = byte_to_cp();
    for (int b = 0; b < 256; b++) inv[cps[b]] = int16_t(b);
    return inv;
  }();
  // A character outside the byte table (a vocabulary not made by GPT-2's encoding) stands for itself.
  std::string out;
  const std::vector<CodePoint> cps = decode_utf8(s);
  for (size_t i = 0; i < cps.size(); i++) {
    const uint32_t cp = cps[i].cp;
    const size_t end = i + 1 < cps.size() ? cps[i + 1].offset : s.size();
    if (cp < inverse.size() && inverse[cp] >= 0)
      out += char(inverse[cp]);
    else
      out.append(s, cps[i].offset, end - cps[i].offset);
  }
  return out;
}

// The longest special token that starts at text[i] (-1 if none); `len` gets its length.
int32_t Tokenizer::Impl::special_at(std::string_view t, size_t i, bool parse_special, size_t& len) const {
  for (int32_t id : special_by_first[uint8_t(t[i])]) {
    if (!parse_special && type[size_t(id)] != kUserDefined) continue;
    const std::string& s = text[size_t(id)];
    if (t.substr(i, s.size()) == s) return len = s.size(), id;
  }
  return -1;
}

void Tokenizer::Impl::encode_plain(std::string_view piece, std::vector<int32_t>& out) const {
  for (const Span& w : pretokenize(piece, pre_type)) encode_word(piece.substr(w.begin, w.end - w.begin), out);
}

// BPE on one word: start from its bytes, merge the adjacent pair of lowest rank (leftmost on a tie) until
// no pair has a merge. A queue of candidate pairs keeps this O(n log n); entries made stale by an earlier
// merge are recognized by their ids and skipped.
void Tokenizer::Impl::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  struct Sym {
    int32_t id, prev, next;
    uint32_t begin, len;
  };
  struct Cand {
    int32_t rank, left, right, lid, rid;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::vector<Sym> syms(word.size());
  for (size_t i = 0; i < word.size(); i++)
    syms[i] = {byte_id[uint8_t(word[i])], int32_t(i) - 1, i + 1 < word.size() ? int32_t(i + 1) : -1, uint32_t(i), 1};
  std::priority_queue<Cand, std::vector<Cand>, std::greater<>> queue;
  auto consider = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    auto it = merges.find(pair_key(syms[l].id, syms[r].id));
    if (it != merges.end()) queue.push({it->second.rank, l, r, syms[l].id, syms[r].id});
  };
  for (int32_t i = 0; i + 1 < int32_t(syms.size()); i++) consider(i, i + 1);
  while (!queue.empty()) {
    const Cand c = queue.top();
    queue.pop();
    Sym &l = syms[c.left], &r = syms[c.right];
    if (l.len == 0 || r.len == 0 || l.next != c.right || l.id != c.lid || r.id != c.rid) continue;  // stale
    l.id = merges.at(pair_key(c.lid, c.rid)).result;
    l.len += r.len, r.len = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = c.left;
    consider(l.prev, c.left);
    consider(c.left, l.next);
  }
  for (int32_t i = word.empty() ? -1 : 0; i >= 0; i = syms[i].next) {
    const Sym& s = syms[i];
    if (s.id < n_vocab()) {
      out.push_back(s.id);
      continue;
    }
    // A string the vocabulary lacks: its bytes one by one; a byte it lacks too is dropped, as llama.cpp and
    // Hugging Face tokenizers (without an unk_token) do, rather than made the unknown token.
    for (uint32_t k = s.begin; k < s.begin + s.len; k++)
      if (const int32_t b = byte_id[uint8_t(word[k])]; b < n_vocab()) out.push_back(b);
  }
}

// ---- Tokenizer ----
Tokenizer Tokenizer::from_gguf(const GGUFFile& f) {
  const std::string model =
      read_key("tokenizer.ggml.model", [&] { return need(f, "tokenizer.ggml.model").as_string(); });
  if (model != "gpt2")
    throw Error("Tokenizer::from_gguf: tokenizer.ggml.model is \"" + model +
                "\"; only \"gpt2\" (byte-level BPE) is supported");
  auto impl = std::make_shared<Impl>();
  impl->load_vocab(f);
  impl->load_merges(f);
  impl->load_specials();
  const size_t n = impl->text.size();
  impl->bos = read_id(f, "tokenizer.ggml.bos_token_id", n);
  impl->eos = read_id(f, "tokenizer.ggml.eos_token_id", n);
  if (const GGUFValue* v = find(f, "tokenizer.ggml.add_bos_token"))
    impl->add_bos = read_key("tokenizer.ggml.add_bos_token", [&] { return v->as_int() != 0; });
  if (const GGUFValue* v = find(f, "tokenizer.chat_template"))
    impl->chat_template = read_key("tokenizer.chat_template", [&] { return v->as_string(); });
  if (const GGUFValue* v = find(f, "tokenizer.ggml.pre"))
    impl->pre = read_key("tokenizer.ggml.pre", [&] { return v->as_string(); });
  impl->pre_type = pre_type(impl->pre);
  return Tokenizer(std::move(impl));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos, bool parse_special) const {
  std::vector<int32_t> out;
  if (add_bos && impl_->bos >= 0) out.push_back(impl_->bos);
  size_t start = 0, len = 0;
  for (size_t i = 0; i < text.size();) {
    const int32_t id = impl_->special_at(text, i, parse_special, len);
    if (id < 0) {
      i++;
      continue;
    }
    impl_->encode_plain(text.substr(start, i - start), out);
    out.push_back(id);
    start = i += len;
  }
  impl_->encode_plain(text.substr(start), out);
  return out;
}

std::string Tokenizer::token_bytes(int32_t id) const {
  if (id < 0 || id >= impl_->n_vocab())
    throw Error("Tokenizer: token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                std::to_string(impl_->n_vocab()) + ")");
  return impl_->bytes[size_t(id)];
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (int32_t id : ids) out += token_bytes(id);
  return out;
}

int32_t Tokenizer::bos_id() const { return impl_->bos; }
int32_t Tokenizer::eos_id() const { return impl_->eos; }
bool Tokenizer::add_bos() const { return impl_->add_bos; }
const std::string& Tokenizer::chat_template() const { return impl_->chat_template; }
const std::string& Tokenizer::pre() const { return impl_->pre; }
int32_t Tokenizer::vocab_size() const { return impl_->n_vocab(); }

std::optional<int32_t> Tokenizer::token_id(std::string_view piece) const {
  auto it = impl_->ids.find(std::string(piece));
  if (it == impl_->ids.end() || it->second >= impl_->n_vocab()) return std::nullopt;
  return it->second;
}

}  // namespace tg::nn
