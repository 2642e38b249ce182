// Memory shared with numpy and PyTorch without a copy (over Tensor::memory and Tensor::from_blob):
//  - out: the buffer protocol on Tensor (memoryview(t), np.asarray(t) for host tensors) and `_memory()`, a
//    nanobind ndarray over the tensor's buffer whose __dlpack__ / __dlpack_device__ the Python __dlpack__ uses;
//  - in: `_from_dlpack(x)` wraps whatever nanobind's ndarray caster takes (a DLPack producer such as a torch
//    tensor on CPU or CUDA, or a buffer-protocol object such as a numpy array) as a tensor over that memory.
// The exported ndarray holds the tensor's Buffer; the imported tensor's Buffer holds the source array.
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>

#include "bindings.h"

namespace tgpy {
namespace {

using nb::dlpack::dtype_code;

// DLPack's device types (dlpack.h's DLDeviceType).
constexpr int kDLCPU = 1, kDLCUDAHost = 3;  // (the other types come from the backends: tg::device_for_memory)

nb::dlpack::dtype dl_dtype(tg::DType d) {
  auto code = [](dtype_code c, int bits) { return nb::dlpack::dtype{uint8_t(c), uint8_t(bits), 1}; };
  using S = tg::Scalar;
  int bits = int(d.itemsize()) * 8;
  switch (d.scalar) {
    case S::Bool:
      return code(dtype_code::Bool, 8);
    case S::Int8:
    case S::Int16:
    case S::Int32:
    case S::Int64:
      return code(dtype_code::Int, bits);
    case S::UInt8:
    case S::UInt16:
    case S::UInt32:
    case S::UInt64:
      return code(dtype_code::UInt, bits);
    case S::BFloat16:
      return code(dtype_code::Bfloat, 16);
    case S::Float16:
    case S::Float32:
    case S::Float64:
      return code(dtype_code::Float, bits);
    default:
      throw nb::type_error(("DLPack: no DLPack dtype for " + d.repr()).c_str());
  }
}

tg::DType tg_dtype(nb::dlpack::dtype d) {
  namespace t = tg::dtypes;
  auto pick = [&](std::initializer_list<tg::DType> by_size) -> std::optional<tg::DType> {
    for (tg::DType x : by_size)
      if (x.itemsize() * 8 == d.bits) return x;
    return std::nullopt;
  };
  std::optional<tg::DType> r;
  if (d.lanes == 1) switch (dtype_code(d.code)) {
      case dtype_code::Bool:
        r = d.bits == 8 ? std::optional(t::bool_) : std::nullopt;
        break;
      case dtype_code::Int:
        r = pick({t::int8, t::int16, t::int32, t::int64});
        break;
      case dtype_code::UInt:
        r = pick({t::uint8, t::uint16, t::uint32, t::uint64});
        break;
      case dtype_code::Float:
        r = pick({t::float16, t::float32, t::float64});
        break;
      case dtype_code::Bfloat:
        r = d.bits == 16 ? std::optional(t::bfloat16) : std::nullopt;
        break;
      default:
        break;
    }
  if (!r)
    throw nb::type_error(("from_dlpack: unsupported element type (DLPack code " + std::to_string(d.code) + ", " +
                          std::to_string(d.bits) + " bits, " + std::to_string(d.lanes) + " lanes)")
                             .c_str());
  return *r;
}

// Our device for memory that DLPack places on (device_type, device_id), as the backends declare their memory.
std::string device_of(int type, int id) {
  if (type == kDLCUDAHost) type = kDLCPU;  // pinned host memory is host memory
  try {
    return tg::device_for_memory(type, id);
  } catch (const tg::Error& e) {
    throw nb::value_error(("from_dlpack: " + std::string(e.what())).c_str());
  }
}

// An nb_ndarray over the realized tensor's memory, holding its Buffer (nanobind's type: buffer protocol and
// DLPack). The tensor is realized, and made contiguous first when it is a padded view.
nb::object memory_array(tg::Tensor& t) {
  tg::MemoryView m = t.memory();
  auto* keep = new std::shared_ptr<const void>(std::move(m.owner));
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<std::shared_ptr<const void>*>(p); });
  std::vector<size_t> shape(m.shape.begin(), m.shape.end());
  if (m.readonly)  // a mapped weights file: consumers see a read-only array
    return nb::cast(nb::ndarray<nb::array_api, nb::ro>(m.data, shape.size(), shape.data(), owner, m.strides.data(),
                                                       dl_dtype(m.dtype), m.device_type, m.device_id));
  return nb::cast(nb::ndarray<nb::array_api>(m.data, shape.size(), shape.data(), owner, m.strides.data(),
                                             dl_dtype(m.dtype), m.device_type, m.device_id));
}

// The buffer protocol for Tensor: host tensors hand out their memory; the exporting object recorded in the view
// is the ndarray (it holds the Buffer), so memoryview(t).obj is not t itself.
int tensor_getbuffer(PyObject* self, Py_buffer* view, int flags) {
  try {
    tg::Tensor& t = nb::cast<tg::Tensor&>(nb::handle(self));
    std::optional<std::pair<int, int>> where = tg::memory_of_device(t.device());
    if (!where || where->first != kDLCPU) {
      PyErr_SetString(PyExc_BufferError, ("Tensor: memory on " + t.device() + " is not host memory").c_str());
      return -1;
    }
    nb::object a = memory_array(t);
    return PyObject_GetBuffer(a.ptr(), view, flags);
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_BufferError, e.what());
    return -1;
  }
}

PyType_Slot slots[] = {{Py_bf_getbuffer, reinterpret_cast<void*>(tensor_getbuffer)}, {0, nullptr}};

tg::Tensor from_dlpack(nb::ndarray<> a) {
  tg::DType dtype = tg_dtype(a.dtype());
  tg::Shape shape, strides;
  for (size_t k = 0; k < a.ndim(); k++) {
    shape.push_back(int64_t(a.shape(k)));
    strides.push_back(a.stride(k));
  }
  std::string device = device_of(a.device_type(), a.device_id());
  // The source array (its DLPack capsule or buffer view) stays alive as long as the Buffer over it; dropping
  // it runs Python code, so take the GIL (Buffers die wherever the last graph node goes, usually under it).
  auto* src = new nb::ndarray<>(a);
  std::shared_ptr<const void> owner(src, [](const void* p) {
    auto* arr = static_cast<nb::ndarray<>*>(const_cast<void*>(p));
    if (!Py_IsInitialized()) return;  // at exit: leave it to the process
    nb::gil_scoped_acquire gil;
    delete arr;
  });
  return tg::Tensor::from_blob(a.data(), shape, dtype, device, std::move(owner), strides);
}

}  // namespace

PyType_Slot* tensor_type_slots() { return slots; }

void bind_shared_memory(nb::class_<tg::Tensor>& c) {
  c.def("_memory", &memory_array,
        "An array over this tensor's memory (realized; a contiguous copy when it is a padded view), with "
        "__dlpack__, __dlpack_device__ and the buffer protocol.");
  c.def_static("_from_dlpack", &from_dlpack, nb::arg("x"),
               "A tensor over the memory of x (a DLPack producer or a buffer-protocol object), without a copy.");
  c.def_static(
      "from_blob",
      [](uintptr_t ptr, std::vector<int64_t> shape, nb::handle dtype, nb::handle device,
         std::optional<std::vector<int64_t>> strides) {
        tg::TensorOptions o = options(dtype, device, nb::none());
        return tg::Tensor::from_blob(reinterpret_cast<void*>(ptr), shape, o.dtype.value_or(tg::dtypes::default_float()),
                                     o.device, nullptr, strides);
      },
      nb::arg("ptr"), nb::arg("shape"), nb::kw_only(), nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none(),
      nb::arg("strides") = nb::none(),
      "A tensor over memory at the address ptr (tinygrad's Tensor.from_blob): the memory must stay valid as long as "
      "the tensor is used.");
}

}  // namespace tgpy
