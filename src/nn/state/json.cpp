// Strict recursive-descent JSON reader with a depth limit; JSON string quoting.
#include "nn/state/json.h"

#include <set>

#include "tg/error.h"

namespace tg::nn::state {
namespace {

// Bytes in the valid UTF-8 sequence at the start of s, 0 if it is not one (overlong forms, surrogates and
// code points above U+10FFFF are invalid).
size_t utf8_length(std::string_view s) {
  if (s.empty()) return 0;
  auto b = [&](size_t k) { return uint8_t(s[k]); };
  uint8_t c0 = b(0);
  if (c0 < 0x80) return 1;
  size_t n = c0 >= 0xC2 && c0 <= 0xDF ? 2 : c0 >= 0xE0 && c0 <= 0xEF ? 3 : c0 >= 0xF0 && c0 <= 0xF4 ? 4 : 0;
  if (n == 0 || s.size() < n) return 0;
  for (size_t k = 1; k < n; k++)
    if ((b(k) & 0xC0) != 0x80) return 0;
  if ((c0 == 0xE0 && b(1) < 0xA0) || (c0 == 0xED && b(1) > 0x9F) || (c0 == 0xF0 && b(1) < 0x90) ||
      (c0 == 0xF4 && b(1) > 0x8F))
    return 0;
  return n;
}

class Parser {
 public:
  Parser(std::string_view s, const std::string& context, int max_depth)
      : s_(s), context_(context), max_depth_(max_depth) {}

  Json parse_document() {
    skip_ws();
    Json v = value(0);
    skip_ws();
    if (i_ != s_.size()) fail("trailing characters after the value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(context_ + ": JSON " + what + " at byte " + std::to_string(i_));
  }
  bool eof() const { return i_ >= s_.size(); }
  char peek() const { return eof() ? '\0' : s_[i_]; }
  void skip_ws() {
    while (!eof() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) i_++;
  }
  void expect(char c) {
    if (peek() != c || eof()) fail(std::string("expected '") + c + "'");
    i_++;
  }
  void literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) fail("invalid literal");
    i_ += word.size();
  }

  Json value(int depth) {
    if (depth > max_depth_) fail("nesting deeper than " + std::to_string(max_depth_));
    Json v;
    switch (peek()) {
      case '{':
        object(v, depth);
        break;
      case '[':
        array(v, depth);
        break;
      case '"':
        v.kind = Json::Kind::String;
        v.text = string();
        break;
      case 't':
        literal("true");
        v.kind = Json::Kind::Bool;
        v.boolean = true;
        break;
      case 'f':
        literal("false");
        v.kind = Json::Kind::Bool;
        break;
      case 'n':
        literal("null");
        break;
      default:
        if (peek() == '-' || (peek() >= '0' && peek() <= '9')) {
          v.kind = Json::Kind::Number;
          v.text = number();
        } else {
          fail(eof() ? "unexpected end" : "unexpected character");
        }
    }
    return v;
  }

  void object(Json& v, int depth) {
    v.kind = Json::Kind::Object;
    expect('{');
    skip_ws();
    if (peek() == '}' && !eof()) {
      i_++;
      return;
    }
    std::set<std::string> keys;
    while (true) {
      skip_ws();
      if (peek() != '"' || eof()) fail("expected a string key");
      std::string key = string();
      if (!keys.insert(key).second) fail("duplicate key \"" + key.substr(0, 64) + "\"");
      skip_ws();
      expect(':');
      skip_ws();
      Json member = value(depth + 1);
      v.members.push_back({std::move(key), std::move(member)});
      skip_ws();
      if (peek() == ',' && !eof()) {
        i_++;
        continue;
      }
      expect('}');
      return;
    }
  }

  void array(Json& v, int depth) {
    v.kind = Json::Kind::Array;
    expect('[');
    skip_ws();
    if (peek() == ']' && !eof()) {
      i_++;
      return;
    }
    while (true) {
      skip_ws();
      v.items.push_back(value(depth + 1));
      skip_ws();
      if (peek() == ',' && !eof()) {
        i_++;
        continue;
      }
      expect(']');
      return;
    }
  }

  std::string number() {
    size_t start = i_;
    auto digits = [&] {
      size_t d = i_;
      while (!eof() && s_[i_] >= '0' && s_[i_] <= '9') i_++;
      if (i_ == d) fail("malformed number");
    };
    if (peek() == '-') i_++;
    if (peek() == '0' && !eof())
      i_++;
    else
      digits();
    if (peek() == '.' && !eof()) {
      i_++;
      digits();
    }
    if ((peek() == 'e' || peek() == 'E') && !eof()) {
      i_++;
      if (peek() == '+' || peek() == '-') i_++;
      digits();
    }
    return std::string(s_.substr(start, i_ - start));
  }

  uint32_t hex4() {
    if (s_.size() - i_ < 4) fail("truncated \\u escape");
    uint32_t c = 0;
    for (int k = 0; k < 4; k++) {
      char h = s_[i_++];
      c <<= 4;
      if (h >= '0' && h <= '9')
        c |= uint32_t(h - '0');
      else if (h >= 'a' && h <= 'f')
        c |= uint32_t(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        c |= uint32_t(h - 'A' + 10);
      else
        fail("bad hex digit in \\u escape");
    }
    return c;
  }

  static void put_utf8(std::string& out, uint32_t c) {
    if (c < 0x80) {
      out += char(c);
    } else if (c < 0x800) {
      out += char(0xC0 | (c >> 6));
      out += char(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += char(0xE0 | (c >> 12));
      out += char(0x80 | ((c >> 6) & 0x3F));
      out += char(0x80 | (c & 0x3F));
    } else {
      out += char(0xF0 | (c >> 18));
      out += char(0x80 | ((c >> 12) & 0x3F));
      out += char(0x80 | ((c >> 6) & 0x3F));
      out += char(0x80 | (c & 0x3F));
    }
  }

  // One UTF-8 sequence starting at i_ (a byte >= 0x80), copied to out after validation.
  void utf8_sequence(std::string& out) {
    size_t n = utf8_length(s_.substr(i_));
    if (n == 0) fail("invalid UTF-8 in string");
    out.append(s_.substr(i_, n));
    i_ += n;
  }

  std::string string() {
    expect('"');
    std::string out;
    while (true) {
      if (eof()) fail("unterminated string");
      uint8_t c = uint8_t(s_[i_]);
      if (c == '"') {
        i_++;
        return out;
      }
      if (c < 0x20) fail("unescaped control character in string");
      if (c >= 0x80) {
        utf8_sequence(out);
        continue;
      }
      i_++;
      if (c != '\\') {
        out += char(c);
        continue;
      }
      if (eof()) fail("unterminated escape");
      char e = s_[i_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) fail("lone low surrogate in \\u escape");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (s_.substr(i_, 2) != "\\u") fail("high surrogate without a low one");
            i_ += 2;
            uint32_t lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) fail("high surrogate without a low one");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          put_utf8(out, cp);
          break;
        }
        default:
          fail("invalid escape");
      }
    }
  }

  std::string_view s_;
  const std::string& context_;
  int max_depth_;
  size_t i_ = 0;
};

}  // namespace

const Json* Json::find(std::string_view key) const {
  for (auto& [k, v] : members)
    if (k == key) return &v;
  return nullptr;
}

std::optional<uint64_t> Json::as_uint() const {
  if (kind != Kind::Number || text.empty()) return std::nullopt;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;  // sign, fraction or exponent
    if (__builtin_mul_overflow(v, uint64_t(10), &v) || __builtin_add_overflow(v, uint64_t(c - '0'), &v))
      return std::nullopt;
  }
  return v;
}

const char* Json::kind_name(Kind k) {
  switch (k) {
    case Kind::Null:
      return "null";
    case Kind::Bool:
      return "bool";
    case Kind::Number:
      return "number";
    case Kind::String:
      return "string";
    case Kind::Array:
      return "array";
    case Kind::Object:
      return "object";
  }
  return "?";
}

Json parse_json(std::string_view text, const std::string& context, int max_depth) {
  return Parser(text, context, max_depth).parse_document();
}

bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_length(s.substr(i));
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string json_quote(std::string_view s) {
  static const char* hex = "0123456789abcdef";
  std::string out = "\"";
  for (char ch : s) {
    auto c = uint8_t(ch);
    if (c == '"')
      out += "\\\"";
    else if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\r')
      out += "\\r";
    else if (c < 0x20)
      out += std::string("\\u00") + hex[c >> 4] + hex[c & 15];
    else
      out += ch;
  }
  return out + "\"";
}

}  // namespace tg::nn::state
