#pragma once
// DType: tinygrad's scalar types plus the vector and pointer forms codegen needs.
#include <cstdint>
#include <functional>
#include <string>

namespace tg {

// Ordered by tinygrad's priority: promotion picks the lowest common upper type by this order.
enum class Scalar : uint8_t {
  Void, Bool, Int8, UInt8, Int16, UInt16, Int32, UInt32, Int64, UInt64, Float16, BFloat16, Float32, Float64
};

struct DType {
  Scalar scalar = Scalar::Void;
  int16_t count = 1;     // vector width; 1 for scalars
  bool ptr = false;      // pointer to `scalar` (codegen only)
  bool local = false;    // pointer into shared/local memory (codegen only)

  constexpr bool operator==(const DType&) const = default;
  constexpr DType vec(int n) const { return DType{scalar, static_cast<int16_t>(n), ptr, local}; }
  constexpr DType scalar_type() const { return DType{scalar, 1, false, false}; }
  constexpr DType base() const { return DType{scalar, count, false, false}; }  // strip pointer-ness
  constexpr DType pointer(bool is_local = false) const { return DType{scalar, count, true, is_local}; }

  int itemsize() const;  // bytes of one element (times count)
  bool is_float() const;
  bool is_int() const;   // signed or unsigned integer, not bool
  bool is_unsigned() const;
  bool is_bool() const { return scalar == Scalar::Bool; }
  std::string name() const;       // tinygrad's short name: "float", "int", "unsigned char" ...
  std::string repr() const;       // "dtypes.float", "dtypes.int.vec(4)", "dtypes.float.ptr()"
  double min() const;             // smallest finite value (as double)
  double max() const;
};

namespace dtypes {
inline constexpr DType void_{Scalar::Void};
inline constexpr DType bool_{Scalar::Bool};
inline constexpr DType int8{Scalar::Int8}, uint8{Scalar::UInt8}, int16{Scalar::Int16}, uint16{Scalar::UInt16};
inline constexpr DType int32{Scalar::Int32}, uint32{Scalar::UInt32}, int64{Scalar::Int64}, uint64{Scalar::UInt64};
inline constexpr DType float16{Scalar::Float16}, bfloat16{Scalar::BFloat16}, float32{Scalar::Float32}, float64{Scalar::Float64};
inline constexpr DType half = float16, float_ = float32, double_ = float64, int_ = int32, long_ = int64, uchar = uint8;

// The least upper bound of two dtypes in tinygrad's promotion lattice.
DType promote(DType a, DType b);
// DEFAULT_FLOAT (env, default float32) and the default int (int32).
DType default_float();
inline constexpr DType default_int = int32;
// Parse a tinygrad name ("float32", "float", "half", "int", "bool" ...); throws tg::Error when unknown.
DType from_name(const std::string& name);
}  // namespace dtypes

}  // namespace tg

template <> struct std::hash<tg::DType> {
  size_t operator()(const tg::DType& d) const noexcept {
    return (size_t(d.scalar) << 24) ^ (size_t(uint16_t(d.count)) << 2) ^ (size_t(d.ptr) << 1) ^ size_t(d.local);
  }
};
