#pragma once
// A strict, bounded JSON reader (RFC 8259) for file headers, and string quoting for writing them. Strict:
// no comments, trailing commas, NaN, duplicate keys, invalid UTF-8 or unescaped control characters.
// Bounded: nesting deeper than max_depth is an error (the parser recurses once per level), and the tree
// is at most a small multiple of the text's size.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tg::nn::state {

struct JsonMember;

struct Json {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  std::string text;         // String: the value; Number: its literal text
  std::vector<Json> items;  // Array
  // Object, in file order. A struct declared ahead, not std::pair<std::string, Json>: a pair of an incomplete
  // type is ill-formed, and clang (with libstdc++ 12) rejects it where g++ let it pass.
  std::vector<JsonMember> members;

  const Json* find(std::string_view key) const;  // Object member or nullptr
  // A Number that is an integer literal (no fraction or exponent) fitting in uint64_t.
  std::optional<uint64_t> as_uint() const;
  static const char* kind_name(Kind k);
};

struct JsonMember {
  std::string key;
  Json value;
};

// Parses `text` as exactly one JSON value (whitespace around it allowed). Throws tg::Error
// "<context>: JSON <what> at byte N".
Json parse_json(std::string_view text, const std::string& context, int max_depth = 64);

bool is_valid_utf8(std::string_view s);

// `s` as a JSON string literal, quotes included (", \ and control characters escaped; UTF-8 kept).
std::string json_quote(std::string_view s);

}  // namespace tg::nn::state
