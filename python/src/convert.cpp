// Python values <-> tensors: numbers, nested lists, buffer-protocol objects (numpy arrays) in; nested lists,
// scalars and numpy arrays out. Data is copied once on the host into a typed vector, then handed to the
// public tg::Tensor(std::vector<T>, shape, opts) constructor.
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <cstring>
#include <limits>

#include "bindings.h"

namespace tgpy {
namespace {

// numpy's scalar types, only when numpy is already imported (no import just to ask).
bool is_numpy_instance(nb::handle h, const char* cls) {
  PyObject* mods = PyImport_GetModuleDict();
  PyObject* np = PyDict_GetItemString(mods, "numpy");
  if (!np) return false;
  nb::object c = nb::borrow(np).attr(cls);
  return PyObject_IsInstance(h.ptr(), c.ptr()) == 1;
}

// Values gathered from nested lists, kept both as doubles and as exact integers (int64 beyond 2^53 must not
// round through a double).
struct Flat {
  std::vector<double> f;
  std::vector<int64_t> i;
  tg::Shape shape;
  bool any_float = false, all_bool = true;
  int64_t scalar_depth = -1;  // the nesting depth of the first scalar; every scalar must sit there
};

void walk(nb::handle h, size_t depth, Flat& out) {
  auto ragged = [] { return nb::value_error("Tensor: nested lists are not rectangular (inhomogeneous shape)"); };
  if (PyList_Check(h.ptr()) || PyTuple_Check(h.ptr())) {
    // Scalars seen at this depth or above: a list here makes the nesting uneven ([[1, [2]]]).
    if (out.scalar_depth >= 0 && int64_t(depth) >= out.scalar_depth) throw ragged();
    nb::sequence seq = nb::borrow<nb::sequence>(h);
    int64_t n = int64_t(nb::len(seq));
    if (out.shape.size() == depth)
      out.shape.push_back(n);  // the first list seen at a depth sets its dim
    else if (out.shape.size() < depth || out.shape[depth] != n)
      throw ragged();
    for (nb::handle x : seq) walk(x, depth + 1, out);
    return;
  }
  if (out.scalar_depth < 0) out.scalar_depth = int64_t(depth);
  if (int64_t(depth) != out.scalar_depth || depth != out.shape.size()) throw ragged();
  std::optional<tg::ConstValue> c = py_number(h);
  if (!c)
    throw nb::type_error(
        ("Tensor: cannot make a tensor element from " + std::string(nb::str(h.type()).c_str())).c_str());
  if (!(c->kind == tg::dtypes::bool_)) out.all_bool = false;
  if (c->kind == tg::dtypes::float32) out.any_float = true;
  out.f.push_back(c->value);
  out.i.push_back(c->kind == tg::dtypes::float32 ? int64_t(0) : c->ivalue);  // exact, uint64 above 2^63 too
}

template <class T>
tg::Tensor from_values(const Flat& v, const tg::TensorOptions& opts) {
  std::vector<T> data(v.f.size());
  for (size_t k = 0; k < data.size(); k++) data[k] = v.any_float ? T(v.f[k]) : T(v.i[k]);
  return tg::Tensor(data, v.shape, opts);
}

tg::Tensor from_list(nb::handle data, tg::TensorOptions opts) {
  Flat v;
  walk(data, 0, v);
  tg::DType target = opts.dtype                     ? *opts.dtype
                     : v.any_float                  ? tg::dtypes::default_float()
                     : (v.all_bool && !v.f.empty()) ? tg::dtypes::bool_
                                                    : tg::dtypes::default_int;
  if (v.f.empty() && !opts.dtype) target = tg::dtypes::default_float();  // Tensor([]) is float, as in tinygrad
  opts.dtype = target;
  using S = tg::Scalar;
  switch (target.scalar) {
    case S::Bool:
      return from_values<uint8_t>(v, opts);  // std::vector<bool> has no data(): bytes, then cast
    case S::Int8:
      return from_values<int8_t>(v, opts);
    case S::UInt8:
      return from_values<uint8_t>(v, opts);
    case S::Int16:
      return from_values<int16_t>(v, opts);
    case S::UInt16:
      return from_values<uint16_t>(v, opts);
    case S::Int32:
      return from_values<int32_t>(v, opts);
    case S::UInt32:
      return from_values<uint32_t>(v, opts);
    case S::Int64:
      return from_values<int64_t>(v, opts);
    case S::UInt64:
      return from_values<uint64_t>(v, opts);
    case S::Float64:
      return from_values<double>(v, opts);
    default:
      return from_values<float>(v, opts);  // float32, and float16/bfloat16 through a cast
  }
}

// A buffer-protocol view's element type, from its struct format string.
std::optional<tg::DType> dtype_of_format(const char* fmt, Py_ssize_t itemsize) {
  if (!fmt) return tg::dtypes::uint8;
  if (*fmt == '@' || *fmt == '=' || *fmt == '<') fmt++;
  if (std::strlen(fmt) != 1) return std::nullopt;
  switch (*fmt) {
    case '?':
      return tg::dtypes::bool_;
    case 'b':
      return tg::dtypes::int8;
    case 'B':
    case 'c':
      return tg::dtypes::uint8;
    case 'h':
      return tg::dtypes::int16;
    case 'H':
      return tg::dtypes::uint16;
    case 'i':
    case 'l':
    case 'q':
      return itemsize == 8 ? tg::dtypes::int64 : tg::dtypes::int32;
    case 'I':
    case 'L':
    case 'Q':
      return itemsize == 8 ? tg::dtypes::uint64 : tg::dtypes::uint32;
    case 'e':
      return tg::dtypes::float16;
    case 'f':
      return tg::dtypes::float32;
    case 'd':
      return tg::dtypes::float64;
    default:
      return std::nullopt;
  }
}

template <class T>
tg::Tensor from_bytes(const void* p, int64_t n, const tg::Shape& shape, tg::TensorOptions opts) {
  std::vector<T> data(static_cast<size_t>(n));
  if (n) std::memcpy(data.data(), p, size_t(n) * sizeof(T));
  return tg::Tensor(data, shape, opts);
}

tg::Tensor from_buffer(const Py_buffer& b, tg::TensorOptions opts) {
  std::optional<tg::DType> dt = dtype_of_format(b.format, b.itemsize);
  if (!dt || dt->itemsize() != b.itemsize)
    throw nb::type_error(
        ("Tensor: unsupported buffer format '" + std::string(b.format ? b.format : "B") + "'").c_str());
  tg::Shape shape(b.shape, b.shape + b.ndim);
  int64_t n = int64_t(b.len / b.itemsize);
  std::optional<tg::DType> want = opts.dtype;
  opts.dtype.reset();
  tg::Tensor t = [&] {
    using S = tg::Scalar;
    switch (dt->scalar) {
      case S::Bool:
        return from_bytes<uint8_t>(b.buf, n, shape, opts).cast(tg::dtypes::bool_);
      case S::Int8:
        return from_bytes<int8_t>(b.buf, n, shape, opts);
      case S::UInt8:
        return from_bytes<uint8_t>(b.buf, n, shape, opts);
      case S::Int16:
        return from_bytes<int16_t>(b.buf, n, shape, opts);
      case S::UInt16:
        return from_bytes<uint16_t>(b.buf, n, shape, opts);
      case S::Int32:
        return from_bytes<int32_t>(b.buf, n, shape, opts);
      case S::UInt32:
        return from_bytes<uint32_t>(b.buf, n, shape, opts);
      case S::Int64:
        return from_bytes<int64_t>(b.buf, n, shape, opts);
      case S::UInt64:
        return from_bytes<uint64_t>(b.buf, n, shape, opts);
      case S::Float16:
        return from_bytes<uint16_t>(b.buf, n, shape, opts).bitcast(tg::dtypes::float16);
      case S::Float32:
        return from_bytes<float>(b.buf, n, shape, opts);
      default:
        return from_bytes<double>(b.buf, n, shape, opts);
    }
  }();
  if (want && !(*want == t.dtype())) t = t.cast(*want);
  t.requires_grad_(opts.requires_grad);
  return t;
}

struct BufferGuard {
  Py_buffer b{};
  bool ok = false;
  ~BufferGuard() {
    if (ok) PyBuffer_Release(&b);
  }
};

}  // namespace

std::optional<tg::DType> dtype_arg(nb::handle h) {
  if (h.is_none()) return std::nullopt;
  if (nb::isinstance<tg::DType>(h)) return nb::cast<tg::DType>(h);
  if (nb::isinstance<nb::str>(h)) return tg::dtypes::from_name(nb::cast<std::string>(h));
  // numpy dtypes and scalar types (np.float32, np.dtype("int64")) by their names.
  for (const char* attr : {"name", "__name__"})
    if (nb::hasattr(h, attr) && nb::isinstance<nb::str>(h.attr(attr)))
      return tg::dtypes::from_name(nb::cast<std::string>(h.attr(attr)));
  throw nb::type_error(("expected a dtype, got " + std::string(nb::repr(h).c_str())).c_str());
}

std::string device_arg(nb::handle device) {
  if (device.is_none()) return "";
  if (!nb::isinstance<nb::tuple>(device) && !nb::isinstance<nb::list>(device)) return nb::cast<std::string>(device);
  std::string s = "(";
  for (nb::handle d : device) s += (s.size() > 1 ? ", " : "") + nb::cast<std::string>(d);
  return s + ")";
}

nb::object device_of(const tg::Tensor& t) {
  std::vector<std::string> devs = t.devices();
  if (devs.size() == 1 && devs[0] == t.device()) return nb::str(t.device().c_str());
  nb::list l;
  for (const std::string& d : devs) l.append(nb::str(d.c_str()));
  return nb::tuple(l);
}

tg::TensorOptions options(nb::handle dtype, nb::handle device, nb::handle requires_grad) {
  tg::TensorOptions o;
  o.dtype = dtype_arg(dtype);
  if (!device.is_none()) o.device = device_arg(device);
  if (!requires_grad.is_none()) o.requires_grad = nb::cast<bool>(requires_grad);
  return o;
}

std::optional<tg::ConstValue> py_number(nb::handle h) {
  PyObject* o = h.ptr();
  if (PyBool_Check(o)) return tg::ConstValue(o == Py_True);
  if (PyLong_Check(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) {  // beyond int64: uint64 range still fits a double's magnitude
      unsigned long long u = PyLong_AsUnsignedLongLong(o);
      if (PyErr_Occurred()) throw nb::python_error();
      return tg::ConstValue(u);
    }
    return tg::ConstValue(int64_t(v));
  }
  if (PyFloat_Check(o)) return tg::ConstValue(PyFloat_AS_DOUBLE(o));
  if (is_numpy_instance(h, "bool_")) return tg::ConstValue(PyObject_IsTrue(o) == 1);
  if (is_numpy_instance(h, "integer")) return py_number(nb::int_(h));  // as a Python int: uint64 above 2^63 too
  if (is_numpy_instance(h, "floating")) return tg::ConstValue(nb::cast<double>(nb::float_(h)));
  return std::nullopt;
}

// bytes are raw memory, as in tinygrad: uint8 values, or with a dtype the bytes reinterpreted as that dtype
// (b"\x00\x00\xc0\x3f" with float32 is [1.5]), not each byte cast.
tg::Tensor from_bytes_object(nb::handle data, tg::TensorOptions opts) {
  const char* p = PyBytes_AS_STRING(data.ptr());
  const int64_t n = int64_t(PyBytes_GET_SIZE(data.ptr()));
  std::optional<tg::DType> want = opts.dtype;
  opts.dtype.reset();
  bool grad = opts.requires_grad;
  opts.requires_grad = false;
  tg::Tensor t = from_bytes<uint8_t>(p, n, {n}, opts);
  if (want && !(*want == tg::dtypes::uint8)) {
    const int64_t size = want->itemsize();
    if (n % size != 0)
      throw nb::value_error(("Tensor: " + std::to_string(n) + " bytes are not a whole number of " + want->name() +
                             " values (" + std::to_string(size) + " bytes each)")
                                .c_str());
    t = want->is_bool() ? t.cast(tg::dtypes::bool_) : t.bitcast(*want);
  }
  t.requires_grad_(grad);
  return t;
}

tg::Tensor tensor_from(nb::handle data, const tg::TensorOptions& opts) {
  if (nb::isinstance<tg::Tensor>(data)) {
    tg::Tensor t = nb::cast<tg::Tensor>(data);
    if (!opts.device.empty()) t = t.to(opts.device);
    if (opts.dtype && !(*opts.dtype == t.dtype())) t = t.cast(*opts.dtype);
    return t;
  }
  if (data.is_none()) return tg::Tensor::empty({0}, opts);
  if (nb::isinstance<tg::BoundVariable>(data)) {  // a 0-d int32 of the variable's value (a kernel argument)
    tg::Tensor t(nb::cast<tg::BoundVariable>(data), {.device = opts.device});
    return opts.dtype && !(*opts.dtype == t.dtype()) ? t.cast(*opts.dtype) : t;
  }
  if (PyBytes_Check(data.ptr())) return from_bytes_object(data, opts);
  if (std::optional<tg::ConstValue> c = py_number(data)) return tg::Tensor(*c, opts);
  if (PyList_Check(data.ptr()) || PyTuple_Check(data.ptr())) return from_list(data, opts);
  if (PyObject_CheckBuffer(data.ptr())) {
    BufferGuard g;
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT;
    if (PyObject_GetBuffer(data.ptr(), &g.b, flags) == 0) {
      g.ok = true;
      return from_buffer(g.b, opts);
    }
    PyErr_Clear();
    // A strided numpy view: numpy makes it contiguous, then the buffer is read as usual.
    nb::object np = nb::module_::import_("numpy");
    nb::object c = np.attr("ascontiguousarray")(data);
    if (PyObject_GetBuffer(c.ptr(), &g.b, flags) != 0) throw nb::python_error();
    g.ok = true;
    return from_buffer(g.b, opts);
  }
  if (nb::hasattr(data, "__array__"))  // array-likes without the buffer protocol
    return tensor_from(nb::module_::import_("numpy").attr("asarray")(data), opts);
  throw nb::type_error(("Tensor: cannot make a tensor from " + std::string(nb::str(data.type()).c_str())).c_str());
}

tg::Tensor operand(const tg::Tensor& like, nb::handle other) {
  if (nb::isinstance<tg::Tensor>(other)) return nb::cast<tg::Tensor>(other);
  if (std::optional<tg::ConstValue> c = py_number(other)) return tg::Tensor::broadcast_scalar(like, *c);
  return tensor_from(other, {.device = like.device()});
}

nb::tuple shape_tuple(const tg::Shape& s) {
  nb::list l;
  for (const tg::sint& d : s) l.append(nb::cast(d));  // an int, or a SymbolicSize (bindings.h)
  return nb::tuple(l);
}

namespace {

template <class T, bool kBool>
nb::object nest(const std::vector<T>& flat, const tg::Shape& shape, size_t dim, size_t& pos) {
  if (dim == shape.size()) {
    if constexpr (kBool)
      return nb::bool_(flat[pos++] != 0);  // bools come as bytes
    else
      return nb::cast(flat[pos++]);
  }
  nb::list l;
  for (int64_t k = 0; k < shape[dim]; k++) l.append(nest<T, kBool>(flat, shape, dim + 1, pos));
  return l;
}

// The values read as T (the tensor's own dtype where T is it: no conversion kernel on the device).
template <class T, bool kBool = false>
nb::object nested(const tg::Tensor& t) {
  std::vector<T> flat = t.tolist<T>();
  size_t pos = 0;
  return nest<T, kBool>(flat, t.shape(), 0, pos);
}

// nanobind aborts the interpreter for an array of more than 64 dims (and numpy 1.x allows 32): past 32 the
// data goes out 1-D and numpy's own reshape makes it, or raises its clean ValueError where it cannot.
constexpr size_t kDirectNumpyDims = 32;

template <class T>
nb::object numpy_of(const tg::Tensor& t, nb::dlpack::dtype dt) {
  auto* v = new std::vector<T>(t.tolist<T>());
  nb::capsule owner(v, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  tg::Shape s = t.shape();
  if (s.size() > kDirectNumpyDims) {
    size_t n = v->size();
    nb::object flat = nb::cast(nb::ndarray<nb::numpy>(v->data(), 1, &n, owner, nullptr, dt));
    return flat.attr("reshape")(shape_tuple(s));
  }
  std::vector<size_t> shape(s.begin(), s.end());
  return nb::cast(nb::ndarray<nb::numpy>(v->data(), shape.size(), shape.data(), owner, nullptr, dt));
}

}  // namespace

nb::object to_list(const tg::Tensor& t) {
  using S = tg::Scalar;
  switch (t.dtype().scalar) {
    case S::Bool: return nested<uint8_t, true>(t);
    case S::Float64: return nested<double>(t);
    case S::Float16: case S::BFloat16: case S::Float32: return nested<float>(t);  // (exact in a float)
    case S::Int8: return nested<int8_t>(t);
    case S::UInt8: return nested<uint8_t>(t);
    case S::Int16: return nested<int16_t>(t);
    case S::UInt16: return nested<uint16_t>(t);
    case S::Int32: return nested<int32_t>(t);
    case S::UInt32: return nested<uint32_t>(t);
    case S::UInt64: return nested<uint64_t>(t);
    default: return nested<int64_t>(t);
  }
}

nb::object to_item(const tg::Tensor& t) {
  if (t.numel() != 1) (void)t.item<float>();  // throws tg::Error naming the shape
  return to_list(t.reshape({}));
}

nb::object to_numpy(const tg::Tensor& t) {
  using S = tg::Scalar;
  using nb::dlpack::dtype_code;
  auto code = [](dtype_code c, int bits) { return nb::dlpack::dtype{uint8_t(c), uint8_t(bits), 1}; };
  switch (t.dtype().scalar) {
    case S::Bool:
      return numpy_of<uint8_t>(t, code(dtype_code::Bool, 8));
    case S::Int8:
      return numpy_of<int8_t>(t, code(dtype_code::Int, 8));
    case S::UInt8:
      return numpy_of<uint8_t>(t, code(dtype_code::UInt, 8));
    case S::Int16:
      return numpy_of<int16_t>(t, code(dtype_code::Int, 16));
    case S::UInt16:
      return numpy_of<uint16_t>(t, code(dtype_code::UInt, 16));
    case S::Int32:
      return numpy_of<int32_t>(t, code(dtype_code::Int, 32));
    case S::UInt32:
      return numpy_of<uint32_t>(t, code(dtype_code::UInt, 32));
    case S::Int64:
      return numpy_of<int64_t>(t, code(dtype_code::Int, 64));
    case S::UInt64:
      return numpy_of<uint64_t>(t, code(dtype_code::UInt, 64));
    case S::Float16:
      return numpy_of<uint16_t>(t.bitcast(tg::dtypes::uint16), code(dtype_code::Float, 16));
    case S::BFloat16:
      return numpy_of<float>(t.cast(tg::dtypes::float32), code(dtype_code::Float, 32));  // numpy has none
    case S::Float32:
      return numpy_of<float>(t, code(dtype_code::Float, 32));
    case S::Float64:
      return numpy_of<double>(t, code(dtype_code::Float, 64));
    default:
      throw nb::type_error(("numpy: no numpy dtype for " + t.dtype().repr()).c_str());
  }
}

}  // namespace tgpy
