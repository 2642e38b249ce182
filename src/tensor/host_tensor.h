#pragma once
// Tensors over the bytes of a loaded file, and the raw bytes of a tensor for saving: what the state loaders
// (nn/state/) need of a tensor beyond the public API, in Tensor terms.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tg/tensor.h"

namespace tg {

// The device a loader puts its tensors on: "" means tg::default_device().
std::string load_device(const std::string& device);

// A HOST tensor of `shape` whose row-major elements are the bytes at `data` (zero copy). `owner` keeps
// them alive as long as any graph node refers to the buffer. The caller has checked that
// prod(shape) * itemsize bytes at `data` are inside the file.
Tensor external_tensor(const void* data, DType dtype, const Shape& shape, std::shared_ptr<const void> owner);

// external_tensor, moved to `device` lazily (a COPY that runs on first use; none for HOST).
Tensor file_tensor(const void* data, DType dtype, const Shape& shape, std::shared_ptr<const void> owner,
                   const std::string& device);

// `flat` (1-D, N elements) seen through an as_strided view: element i of the result is
// flat[offset + sum(i_k * strides_k)]. The caller has checked that every index is < N.
Tensor strided_view(const Tensor& flat, const Shape& shape, const Shape& strides, int64_t offset);

// A VIEW of a BUFFER that is one dense row-major range of it (an offset, no mask), as realize() leaves it.
bool is_dense_buffer_view(const Tensor& t);
// Any view of a BUFFER: the tensor's value is memory of its own (realized), which assign() writes in place.
bool is_buffer_view(const Tensor& t);

// t.to(device), also for strided views of HOST buffers (which Tensor::to cannot make contiguous on HOST):
// the whole buffer is copied, then viewed on `device`.
Tensor host_view_to(const Tensor& t, const std::string& device);

// The realized, row-major bytes of `t` (itemsize bytes per element, the tensor's own dtype).
std::vector<uint8_t> tensor_bytes(const Tensor& t);

}  // namespace tg
