// program_fuzz: each Node kind as the tensor op it stands for, and printed as the C++ that replays it.
#include "program_fuzz_apply.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace program_fuzz {
namespace {

using tg::Tensor;

Tensor unary(const std::string& op, const Tensor& x) {
  if (op == "neg") return x.neg();
  if (op == "abs") return x.abs();
  if (op == "relu") return x.relu();
  if (op == "sin") return x.sin();
  if (op == "exp2") return x.exp2();
  if (op == "sqrt") return x.sqrt();
  if (op == "log2") return x.log2();
  if (op == "reciprocal") return x.reciprocal();
  if (op == "sigmoid") return x.sigmoid();
  if (op == "tanh") return x.tanh();
  if (op == "floor") return x.floor();
  if (op == "ceil") return x.ceil();
  if (op == "trunc") return x.trunc();
  if (op == "round") return x.round();
  if (op == "logical_not") return x.logical_not();
  throw std::logic_error("program_fuzz: unknown unary op " + op);
}

Tensor binary(const std::string& op, const Tensor& x, const Tensor& y) {
  if (op == "add") return x.add(y);
  if (op == "sub") return x.sub(y);
  if (op == "mul") return x.mul(y);
  if (op == "div") return x.div(y);
  if (op == "maximum") return x.maximum(y);
  if (op == "minimum") return x.minimum(y);
  if (op == "and") return x.bitwise_and(y);
  if (op == "or") return x.bitwise_or(y);
  if (op == "xor") return x.bitwise_xor(y);
  if (op == "lt") return x.lt(y);
  if (op == "gt") return x.gt(y);
  if (op == "le") return x.le(y);
  if (op == "ge") return x.ge(y);
  if (op == "eq") return x.eq(y);
  if (op == "ne") return x.ne(y);
  throw std::logic_error("program_fuzz: unknown binary op " + op);
}

// A C++ scalar: a float literal where `to` is a float, an int otherwise (it decides promotion).
tg::ConstValue scalar(const Node& n) {
  if (n.to.is_float()) return tg::ConstValue(n.data.at(0));
  if (n.to.is_bool()) return tg::ConstValue(n.data.at(0) != 0);
  return tg::ConstValue(int64_t(n.data.at(0)));
}

// Empty axes: the reduce over everything (the no-argument overload).
Tensor reduce(const Node& n, const Tensor& x) {
  const std::vector<int64_t>& ax = n.shape_arg;
  bool all = ax.empty();
  if (n.op == "sum") return all ? x.sum() : x.sum(ax, n.keepdim);
  if (n.op == "max") return all ? x.max() : x.max(ax, n.keepdim);
  if (n.op == "min") return all ? x.min() : x.min(ax, n.keepdim);
  if (n.op == "mean") return all ? x.mean() : x.mean(ax, n.keepdim);
  if (n.op == "prod") return all ? x.prod() : x.prod(ax.at(0), n.keepdim);
  throw std::logic_error("program_fuzz: unknown reduce op " + n.op);
}

template <class T>
std::string list(const std::vector<T>& v) {
  std::ostringstream o;
  o << "{";
  for (size_t i = 0; i < v.size(); i++) {
    if (i) o << ", ";
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(v[i]))
        o << "NAN";
      else if (std::isinf(v[i]))
        o << (v[i] < 0 ? "-INFINITY" : "INFINITY");
      else if (v[i] == 0 && std::signbit(v[i]))
        o << "-0.0";
      else
        o << v[i];
    } else {
      o << v[i];
    }
  }
  return o.str() + "}";
}

std::string pads(const tg::PadArg& p) {
  std::string s = "{";
  for (size_t i = 0; i < p.size(); i++)
    s += (i ? ", {" : "{") + std::to_string(p[i].first) + ", " + std::to_string(p[i].second) + "}";
  return s + "}";
}

std::string dtype_name(tg::DType d) {
  return d == tg::dtypes::float32   ? "float32"
         : d == tg::dtypes::float16 ? "float16"
         : d == tg::dtypes::int32   ? "int32"
         : d == tg::dtypes::bool_   ? "bool_"
                                    : d.name();
}

}  // namespace

std::string fmt(const tg::Shape& s) { return list(s); }

Tensor apply(const Node& n, const std::vector<Tensor>& built, const std::string& device) {
  auto src = [&](size_t i) -> const Tensor& { return built.at(size_t(n.src.at(i))); };
  switch (n.kind) {
    case Kind::Input: {
      if (n.op == "full") return Tensor::full(n.shape, scalar(n), {.dtype = n.to, .device = device});
      if (n.op == "arange") {
        int64_t count = 1;
        for (int64_t d : n.shape) count *= d;
        return Tensor::arange(count, {.dtype = n.to, .device = device}).reshape(n.shape);
      }
      // Exact in float32; other dtypes are a cast of it on the device, then a leaf of their own.
      std::vector<float> f(n.data.begin(), n.data.end());
      return Tensor(f, n.shape, {.dtype = n.to, .device = device, .requires_grad = n.requires_grad});
    }
    case Kind::Unary:
      return unary(n.op, src(0));
    case Kind::Binary:
    case Kind::Compare:
      if (n.src.size() == 2) return binary(n.op, src(0), src(1));
      if (n.scalar_left) return binary(n.op, Tensor::broadcast_scalar(src(0), scalar(n)), src(0));
      return binary(n.op, src(0), Tensor::broadcast_scalar(src(0), scalar(n)));
    case Kind::Where:
      return src(0).where(src(1), src(2));
    case Kind::Cast:
      return src(0).cast(n.to);
    case Kind::Reshape:
      return src(0).reshape(n.shape_arg);
    case Kind::Permute:
      return src(0).permute(n.shape_arg);
    case Kind::Expand:
      return src(0).expand(n.shape_arg);
    case Kind::Pad:
      return src(0).pad(n.pads);
    case Kind::Shrink:
      return src(0).shrink(n.pads);
    case Kind::Flip:
      return src(0).flip(n.shape_arg);
    case Kind::Reduce:
      return reduce(n, src(0));
    case Kind::Matmul:
      return src(0).matmul(src(1));
    case Kind::Contiguous:
      return src(0).contiguous();
  }
  throw std::logic_error("program_fuzz: unknown node kind");
}

std::string describe_node(const Node& n, int index) {
  auto s = [&](size_t i) { return "t" + std::to_string(n.src.at(i)); };
  std::string rhs;
  switch (n.kind) {
    case Kind::Input:
      if (n.op == "full") {
        rhs = "Tensor::full(" + fmt(n.shape) + ", " + list(n.data) + "[0], {.dtype = dtypes::" + dtype_name(n.to) +
              ", .device = dev})";
        break;
      }
      if (n.op == "arange") {
        rhs = "Tensor::arange(numel " + fmt(n.shape) + ", {.dtype = dtypes::" + dtype_name(n.to) +
              ", .device = dev}).reshape(" + fmt(n.shape) + ")";
        break;
      }
      rhs = "Tensor(std::vector<float>" + list(n.data) + ", " + fmt(n.shape) +
            ", {.dtype = dtypes::" + dtype_name(n.to) + ", .device = dev" +
            (n.requires_grad ? ", .requires_grad = true" : "") + "})";
      break;
    case Kind::Unary:
      rhs = s(0) + "." + n.op + "()";
      break;
    case Kind::Binary:
    case Kind::Compare: {
      std::string op = n.op == "and" || n.op == "or" || n.op == "xor" ? "bitwise_" + n.op : n.op;
      if (n.src.size() == 2) {
        rhs = s(0) + "." + op + "(" + s(1) + ")";
      } else {  // a C++ scalar, as broadcast_scalar makes it
        std::string c = "Tensor::broadcast_scalar(" + s(0) + ", " + list(n.data) + "[0] as " + dtype_name(n.to) + ")";
        rhs = n.scalar_left ? c + "." + op + "(" + s(0) + ")" : s(0) + "." + op + "(" + c + ")";
      }
      break;
    }
    case Kind::Where:
      rhs = s(0) + ".where(" + s(1) + ", " + s(2) + ")";
      break;
    case Kind::Cast:
      rhs = s(0) + ".cast(dtypes::" + dtype_name(n.to) + ")";
      break;
    case Kind::Reshape:
      rhs = s(0) + ".reshape(" + fmt(n.shape_arg) + ")";
      break;
    case Kind::Permute:
      rhs = s(0) + ".permute(" + fmt(n.shape_arg) + ")";
      break;
    case Kind::Expand:
      rhs = s(0) + ".expand(" + fmt(n.shape_arg) + ")";
      break;
    case Kind::Pad:
      rhs = s(0) + ".pad(" + pads(n.pads) + ")";
      break;
    case Kind::Shrink:
      rhs = s(0) + ".shrink(" + pads(n.pads) + ")";
      break;
    case Kind::Flip:
      rhs = s(0) + ".flip(std::vector<int64_t>" + fmt(n.shape_arg) + ")";
      break;
    case Kind::Reduce:
      if (n.shape_arg.empty())
        rhs = s(0) + "." + n.op + "()";
      else if (n.op == "prod")
        rhs = s(0) + ".prod(" + std::to_string(n.shape_arg[0]) + ", " + (n.keepdim ? "true" : "false") + ")";
      else
        rhs = s(0) + "." + n.op + "(std::vector<int64_t>" + fmt(n.shape_arg) + ", " + (n.keepdim ? "true" : "false") +
              ")";
      break;
    case Kind::Matmul:
      rhs = s(0) + ".matmul(" + s(1) + ")";
      break;
    case Kind::Contiguous:
      rhs = s(0) + ".contiguous()";
      break;
  }
  std::ostringstream o;
  o << "Tensor t" << index << " = " << rhs << ";  // " << fmt(n.shape) << " " << dtype_name(n.dtype)
    << " |x|<=" << n.v.bound << (n.v.exact() ? " exact" : " err<=" + std::to_string(n.v.err))
    << (n.v.inf ? " inf?" : "") << (n.v.nan ? " nan?" : "");
  return o.str();
}

}  // namespace program_fuzz
