// DType facts and tinygrad's promotion lattice.
#include "tg/dtype.h"

#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "helpers/env.h"
#include "tg/error.h"

namespace tg {
namespace {

struct ScalarInfo {
  const char* name;       // C-ish name used in tinygrad's repr and kernels
  const char* long_name;  // numpy-ish name
  int size;
};

constexpr std::array<ScalarInfo, 14> kInfo{{
    {"void", "void", 0},
    {"bool", "bool", 1},
    {"signed char", "int8", 1},
    {"unsigned char", "uint8", 1},
    {"short", "int16", 2},
    {"unsigned short", "uint16", 2},
    {"int", "int32", 4},
    {"unsigned int", "uint32", 4},
    {"long", "int64", 8},
    {"unsigned long", "uint64", 8},
    {"half", "float16", 2},
    {"__bf16", "bfloat16", 2},
    {"float", "float32", 4},
    {"double", "float64", 8},
}};

const ScalarInfo& info(Scalar s) { return kInfo[static_cast<size_t>(s)]; }

// tinygrad's promo_lattice: each type's direct parents.
std::vector<Scalar> parents(Scalar s) {
  using S = Scalar;
  switch (s) {
    case S::Bool: return {S::Int8, S::UInt8};
    case S::Int8: return {S::Int16};
    case S::Int16: return {S::Int32};
    case S::Int32: return {S::Int64};
    case S::Int64: return {S::Float16, S::BFloat16};
    case S::UInt8: return {S::Int16, S::UInt16};
    case S::UInt16: return {S::Int32, S::UInt32};
    case S::UInt32: return {S::Int64, S::UInt64};
    case S::UInt64: return {S::Float16, S::BFloat16};
    case S::Float16: return {S::Float32};
    case S::BFloat16: return {S::Float32};
    case S::Float32: return {S::Float64};
    default: return {};
  }
}

// Bitmask of s and every type above it in the lattice.
uint32_t upper_set(Scalar s) {
  uint32_t m = 1u << static_cast<int>(s);
  for (Scalar p : parents(s)) m |= upper_set(p);
  return m;
}

}  // namespace

int DType::itemsize() const { return ptr ? 8 : info(scalar).size * count; }
bool DType::is_float() const {
  return scalar == Scalar::Float16 || scalar == Scalar::BFloat16 || scalar == Scalar::Float32 ||
         scalar == Scalar::Float64;
}
bool DType::is_int() const { return scalar >= Scalar::Int8 && scalar <= Scalar::UInt64; }
bool DType::is_unsigned() const {
  return scalar == Scalar::UInt8 || scalar == Scalar::UInt16 || scalar == Scalar::UInt32 || scalar == Scalar::UInt64;
}
std::string DType::name() const { return info(scalar).name; }

std::string DType::repr() const {
  std::string n = info(scalar).long_name;
  // tinygrad prints the short alias for the two defaults.
  if (scalar == Scalar::Float32) n = "float";
  if (scalar == Scalar::Int32) n = "int";
  std::string r = "dtypes." + n;
  if (count != 1) r += ".vec(" + std::to_string(count) + ")";
  if (ptr) r += local ? ".ptr(local=True)" : ".ptr()";
  return r;
}

double DType::min() const {
  switch (scalar) {
    case Scalar::Bool: return 0;
    case Scalar::Int8: return -128;
    case Scalar::Int16: return -32768;
    case Scalar::Int32: return std::numeric_limits<int32_t>::min();
    case Scalar::Int64: return static_cast<double>(std::numeric_limits<int64_t>::min());
    case Scalar::UInt8: case Scalar::UInt16: case Scalar::UInt32: case Scalar::UInt64: return 0;
    default: return -std::numeric_limits<double>::infinity();
  }
}
double DType::max() const {
  switch (scalar) {
    case Scalar::Bool: return 1;
    case Scalar::Int8: return 127;
    case Scalar::Int16: return 32767;
    case Scalar::Int32: return std::numeric_limits<int32_t>::max();
    case Scalar::Int64: return static_cast<double>(std::numeric_limits<int64_t>::max());
    case Scalar::UInt8: return 255;
    case Scalar::UInt16: return 65535;
    case Scalar::UInt32: return std::numeric_limits<uint32_t>::max();
    case Scalar::UInt64: return static_cast<double>(std::numeric_limits<uint64_t>::max());
    default: return std::numeric_limits<double>::infinity();
  }
}

namespace dtypes {

DType promote(DType a, DType b) {
  if (a.scalar == b.scalar) return a.scalar_type();
  uint32_t common = upper_set(a.scalar) & upper_set(b.scalar);
  for (int s = 0; s < 32; s++)
    if (common & (1u << s)) return DType{static_cast<Scalar>(s)};
  throw Error("dtypes.promote: no common type for " + a.repr() + " and " + b.repr());
}

DType default_float() {
  static const DType d = from_name(getenv_str("DEFAULT_FLOAT", "float32"));
  return d;
}

DType from_name(const std::string& name) {
  std::string n;
  for (char c : name) n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (size_t i = 0; i < kInfo.size(); i++)
    if (n == kInfo[i].long_name) return DType{static_cast<Scalar>(i)};
  if (n == "float" || n == "float_") return float32;
  if (n == "double") return float64;
  if (n == "half") return float16;
  if (n == "int") return int32;
  if (n == "long") return int64;
  if (n == "char") return int8;
  if (n == "uchar") return uint8;
  if (n == "short") return int16;
  if (n == "uint") return uint32;
  if (n == "ulong") return uint64;
  throw Error("dtypes: unknown dtype name '" + name + "' (expected float32, float16, bfloat16, int32, bool ...)");
}

}  // namespace dtypes
}  // namespace tg
