#pragma once
// tg::sint: one dimension of a shape, an integer or a symbolic expression over bound Variables (tinygrad's
// sint). `Variable("start_pos", 1, 1024).bind(n) + 1` is a sint; a tensor shrunk to it has a dimension whose
// size is known only when a kernel runs, so the kernel compiles once for the variable's whole range.
//
// An integer sint behaves as an int64_t: it converts implicitly, and arithmetic with integers stays integral.
// A symbolic one converts to an integer nowhere: the conversion throws tg::Error naming the expression, so code
// that needs a number where a variable stands fails loudly instead of computing with a wrong size. Comparisons
// are decided by the expression's range (`v + 1 > 0` is true for a v in [1, 1024]); an undecidable one throws.
#include <concepts>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace tg {

struct UOp;
struct BoundVariable;

class sint {
 public:
  sint() = default;
  template <std::integral T>
  sint(T v) : v_(int64_t(v)) {}  // NOLINT(google-explicit-constructor): a dim is written as a number
  sint(const BoundVariable& v);  // NOLINT(google-explicit-constructor): the variable with its value
  // An integer expression node (int32): a CONST becomes an integer sint. For the library's own passes.
  static sint from_uop(std::shared_ptr<const UOp> u);

  bool is_int() const { return !u_; }
  bool is_symbolic() const { return bool(u_); }
  // The integer; throws tg::Error ("a symbolic size (start_pos+1) where a number is needed") when symbolic.
  int64_t value() const {
    if (u_) throw_symbolic();
    return v_;
  }
  operator int64_t() const { return value(); }  // NOLINT(google-explicit-constructor)
  // The expression (null for an integer), and the range of values it takes over its variables' ranges.
  const std::shared_ptr<const UOp>& uop() const { return u_; }
  int64_t vmin() const;
  int64_t vmax() const;
  // The value with each variable at its bound value (tinygrad's sym_infer); the integer when not symbolic.
  int64_t bound_value() const;
  std::string str() const;  // "4", "start_pos", "(start_pos+1)"
  // The integer's hash, or the (interned) expression node's: equal sints hash alike.
  size_t hash() const { return u_ ? std::hash<const void*>()(u_.get()) : std::hash<int64_t>()(v_); }

  // Same integer, or the same expression (expressions are interned and kept simplified).
  friend bool operator==(const sint& a, const sint& b) { return a.v_ == b.v_ && a.u_ == b.u_; }
  template <std::integral T>
  friend bool operator==(const sint& a, T b) {
    return !a.u_ && a.v_ == int64_t(b);
  }

  sint& operator+=(const sint& b) { return *this = *this + b; }
  sint& operator-=(const sint& b) { return *this = *this - b; }
  sint& operator*=(const sint& b) { return *this = *this * b; }
  sint& operator/=(const sint& b) { return *this = *this / b; }
  sint& operator%=(const sint& b) { return *this = *this % b; }
  // Integers take the inline path; symbolic operands and int64 overflow (a tg::Error) go out of line.
  friend sint operator+(const sint& a, const sint& b) {
    int64_t r;
    if (!a.u_ && !b.u_ && !__builtin_add_overflow(a.v_, b.v_, &r)) return r;
    return slow(0, a, b);
  }
  friend sint operator-(const sint& a, const sint& b) {
    int64_t r;
    if (!a.u_ && !b.u_ && !__builtin_sub_overflow(a.v_, b.v_, &r)) return r;
    return slow(1, a, b);
  }
  friend sint operator*(const sint& a, const sint& b) {
    int64_t r;
    if (!a.u_ && !b.u_ && !__builtin_mul_overflow(a.v_, b.v_, &r)) return r;
    return slow(2, a, b);
  }
  friend sint operator/(const sint& a, const sint& b);  // floor division of non-negative sizes
  friend sint operator%(const sint& a, const sint& b);
  friend sint operator-(const sint& a) { return sint(0) - a; }
  friend sint smax(const sint& a, const sint& b);
  friend sint smin(const sint& a, const sint& b);
  // Decided over the variables' ranges; tg::Error when the ranges allow both answers.
  friend bool operator<(const sint& a, const sint& b);
  friend bool operator<=(const sint& a, const sint& b) { return !(b < a); }
  friend bool operator>(const sint& a, const sint& b) { return b < a; }
  friend bool operator>=(const sint& a, const sint& b) { return !(a < b); }

 private:
  [[noreturn]] void throw_symbolic() const;
  static sint slow(int op, const sint& a, const sint& b);  // op: 0 +, 1 -, 2 *
  int64_t v_ = 0;
  std::shared_ptr<const UOp> u_;  // set when symbolic
};

// Mixed with integers, the integer is read as a sint (these win over the built-in operators, which would convert
// the sint to int64_t and throw for a symbolic one).
#define TG_SINT_MIXED(OP)                                                      \
  template <std::integral T>                                                  \
  inline auto operator OP(const sint& a, T b) { return a OP sint(b); }        \
  template <std::integral T>                                                  \
  inline auto operator OP(T a, const sint& b) { return sint(a) OP b; }
TG_SINT_MIXED(+)
TG_SINT_MIXED(-)
TG_SINT_MIXED(*)
TG_SINT_MIXED(/)
TG_SINT_MIXED(%)
TG_SINT_MIXED(<)
TG_SINT_MIXED(<=)
TG_SINT_MIXED(>)
TG_SINT_MIXED(>=)
#undef TG_SINT_MIXED
inline std::string to_string(const sint& s) { return s.str(); }
std::ostream& operator<<(std::ostream& os, const sint& s);
// A shape: one sint per dim. It converts from plain int64 sizes, and to them (throwing tg::Error when a dim is
// symbolic), so code written for integer shapes keeps working on them.
struct Shape : std::vector<sint> {
  using std::vector<sint>::vector;
  Shape() = default;
  Shape(std::vector<sint> v) : std::vector<sint>(std::move(v)) {}                     // NOLINT
  Shape(const std::vector<int64_t>& v) : std::vector<sint>(v.begin(), v.end()) {}  // NOLINT
  operator std::vector<int64_t>() const { return std::vector<int64_t>(begin(), end()); }  // NOLINT
};

// "(2, 3)", "(start_pos, 64)", "(5,)": a shape as tinygrad prints it (a Python tuple), for messages.
std::string to_string(const Shape& s);

inline bool is_symbolic(const Shape& s) {
  for (const sint& d : s)
    if (d.is_symbolic()) return true;
  return false;
}

// A shape against plain sizes (EXPECT_EQ(t.shape(), (std::vector<int64_t>{2, 3}))): equal when every dim is that int.
bool operator==(const std::vector<sint>& a, const std::vector<int64_t>& b);

}  // namespace tg
