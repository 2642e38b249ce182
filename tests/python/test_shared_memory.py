"""Memory shared with numpy and PyTorch without a copy: the buffer protocol, np.asarray, DLPack both ways.
Each test shows sharing by writing through one side and reading through the other."""
import gc

import numpy as np
import pytest
import torch

from tinygrad_cpp import Tensor, dtypes, from_dlpack

# (numpy dtype, torch dtype, our dtype) for every dtype the three share.
DTYPES = [(np.bool_, torch.bool, dtypes.bool), (np.int8, torch.int8, dtypes.int8), (np.uint8, torch.uint8, dtypes.uint8),
          (np.int16, torch.int16, dtypes.int16), (np.int32, torch.int32, dtypes.int32),
          (np.int64, torch.int64, dtypes.int64), (np.float16, torch.float16, dtypes.float16),
          (np.float32, torch.float32, dtypes.float32), (np.float64, torch.float64, dtypes.float64)]


def _torch_reads_dlpack_bool() -> bool:  # torch < 2.1 has no DLPack bool (kDLBool) either way
  try: return torch.from_dlpack(torch.zeros(1, dtype=torch.bool)).dtype == torch.bool
  except RuntimeError: return False
TORCH_DLPACK_BOOL = _torch_reads_dlpack_bool()


def host_tensor(a: np.ndarray) -> Tensor:
  return Tensor(a, device="CPU").realize()


# ---- out: our memory seen by numpy and torch ----
def test_memoryview_is_the_tensors_memory():
  t = host_tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
  m = memoryview(t)
  assert m.shape == (2, 3) and m.format == "f" and m.itemsize == 4 and not m.readonly
  m[1, 2] = 50.0
  assert t.tolist() == [[0, 1, 2], [3, 4, 50]]
  assert t.data().tolist() == [[0, 1, 2], [3, 4, 50]]


def test_asarray_shares_and_writes_are_seen_by_the_tensor():
  t = host_tensor(np.zeros((2, 2), np.float32))
  a = np.asarray(t)
  a[0, 1] = 7
  assert (t + 1).tolist() == [[1, 8], [1, 1]]
  assert np.shares_memory(a, np.asarray(t))


def test_strided_views_are_shared_with_their_strides():
  base = host_tensor(np.arange(12, dtype=np.int32).reshape(3, 4))
  view = base.permute(1, 0)[1:3]  # (2, 3): a window of base's buffer, no copy
  a = np.asarray(view)
  assert a.shape == (2, 3) and a.strides == (4, 16)
  np.testing.assert_equal(a, np.arange(12).reshape(3, 4).T[1:3])
  assert np.shares_memory(a, np.asarray(base))


def test_padded_views_are_exported_as_a_copy():
  t = host_tensor(np.ones(2, np.float32)).pad(((1, 1),))
  np.testing.assert_equal(np.asarray(t), [0, 1, 1, 0])


@pytest.mark.parametrize("np_dtype,torch_dtype,dtype", DTYPES)
def test_every_dtype_goes_out_through_dlpack_and_the_buffer_protocol(np_dtype, torch_dtype, dtype):
  src = (np.arange(6) % 3).astype(np_dtype).reshape(3, 2)
  t = host_tensor(src)
  assert t.dtype == dtype
  np.testing.assert_equal(np.asarray(t), src)
  if np_dtype is not np.bool_ or np.lib.NumpyVersion(np.__version__) >= "1.25.0":  # older numpy: no DLPack bool
    np.testing.assert_equal(np.from_dlpack(t), src)
  if np_dtype is np.bool_ and not TORCH_DLPACK_BOOL: return  # the buffer protocol above is bool's way out
  tt = torch.from_dlpack(t)
  assert tt.dtype == torch_dtype and tt.tolist() == src.tolist()
  assert tt.data_ptr() == np.asarray(t).__array_interface__["data"][0]  # the same memory


def test_torch_writes_are_seen_by_the_tensor():
  t = host_tensor(np.zeros(3, np.float32))
  torch.from_dlpack(t).add_(2)
  assert t.tolist() == [2, 2, 2]


def test_bfloat16_goes_out_through_dlpack():
  t = Tensor([1.5, -2.0, 3.25], dtype=dtypes.bfloat16, device="CPU")
  tt = torch.from_dlpack(t)
  assert tt.dtype == torch.bfloat16 and tt.tolist() == [1.5, -2.0, 3.25]


def test_lazy_tensors_are_realized_first_and_the_export_outlives_the_tensor():
  t = Tensor.arange(4, device="CPU") * 3  # not realized yet
  a = np.from_dlpack(t)
  del t
  gc.collect()
  np.testing.assert_equal(a, [0, 3, 6, 9])


def test_edge_shapes_go_out():
  assert np.asarray(host_tensor(np.zeros((0, 3), np.float32))).shape == (0, 3)
  assert torch.from_dlpack(host_tensor(np.zeros((2, 0), np.int32))).shape == (2, 0)
  assert np.asarray(Tensor(5.0, device="CPU")).shape == () and np.asarray(Tensor(5.0, device="CPU")) == 5.0
  b = host_tensor(np.ones((1, 3), np.float32)).expand(2, 3)  # a broadcast view: stride 0, still no copy
  assert np.asarray(b).strides == (0, 4) and np.asarray(b).tolist() == [[1, 1, 1]] * 2


def test_dlpack_device_and_arguments():
  t = host_tensor(np.zeros(2, np.float32))
  assert t.__dlpack_device__() == (1, 0)
  cap = t.__dlpack__(max_version=(1, 0), dl_device=(1, 0))
  assert type(cap).__name__ == "PyCapsule"
  with pytest.raises(BufferError):
    t.__dlpack__(dl_device=(2, 0))  # another device: the consumer must copy itself
  copied = np.from_dlpack(t, copy=True) if np.lib.NumpyVersion(np.__version__) >= "2.1.0" else \
           torch.from_dlpack(t.__dlpack__(copy=True)).numpy()
  copied[0] = 9
  assert t.tolist() == [0, 0]


def test_devices_that_cannot_share_still_convert():
  t = Tensor([1.0, 2.0], device="INTERP")
  with pytest.raises(BufferError):
    memoryview(t)
  np.testing.assert_equal(np.asarray(t), [1, 2])  # numpy falls back to __array__, a copy
  with pytest.raises(BufferError):
    t.__dlpack_device__()
  # each backend declares where its memory is, in DLPack's terms
  from tinygrad_cpp import _C
  assert _C.memory_of_device("HOST") == (1, 0) and _C.memory_of_device("CPU") == (1, 0)
  assert _C.memory_of_device("INTERP") is None and _C.memory_of_device("NULL") is None


# ---- in: numpy's and torch's memory used by our kernels in place ----
def test_from_dlpack_uses_numpy_memory_in_place():
  a = np.arange(6, dtype=np.float32).reshape(2, 3)
  t = from_dlpack(a)
  assert t.device == "CPU" and t.shape == (2, 3) and t.dtype == dtypes.float32
  a[0, 0] = 100  # no copy: the next computation sees it
  assert t.sum().item() == 115
  t.assign(t * 2).realize()  # and assign writes numpy's memory
  np.testing.assert_equal(a, np.array([[200, 2, 4], [6, 8, 10]], np.float32))


def test_from_dlpack_takes_torch_strides():
  base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
  for view in (base.T, base[:, ::2], base[1:3, 2:], base.flip(0), base[:, :1].expand(4, 5)):
    t = Tensor.from_dlpack(view)
    assert t.shape == tuple(view.shape)
    np.testing.assert_equal(t.numpy(), view.numpy())
    np.testing.assert_equal((t * 2).numpy(), (view * 2).numpy())
  base[0, 0] = -1
  assert Tensor.from_dlpack(base.T).numpy()[0, 0] == -1


@pytest.mark.parametrize("np_dtype,torch_dtype,dtype", DTYPES)
def test_every_dtype_comes_in(np_dtype, torch_dtype, dtype):
  src = (np.arange(6) % 3).astype(np_dtype).reshape(2, 3)
  sources = [src] + ([torch.from_numpy(src.copy())] if np_dtype is not np.bool_ or TORCH_DLPACK_BOOL else [])
  for x in sources:
    t = from_dlpack(x)
    assert t.dtype == dtype
    np.testing.assert_equal(t.numpy(), src)


def test_bfloat16_comes_in():
  t = from_dlpack(torch.tensor([1.5, -2.0], dtype=torch.bfloat16))
  assert t.dtype == dtypes.bfloat16 and t.tolist() == [1.5, -2.0]


def test_the_source_outlives_its_python_name():
  a = np.full(4, 3, np.int32)
  t = from_dlpack(a)
  del a
  gc.collect()
  assert (t + 1).tolist() == [4, 4, 4, 4]


def test_gradients_flow_through_shared_memory():
  w = from_dlpack(np.array([1.0, 2.0, 3.0], np.float32), requires_grad=True)
  (w * w).sum().backward()
  assert w.grad.tolist() == [2, 4, 6]


def test_device_and_dtype_arguments_copy():
  a = np.arange(3, dtype=np.int32)
  t = from_dlpack(a, dtype=dtypes.float32)
  a[0] = 10
  assert t.dtype == dtypes.float32 and t.tolist() == [0, 1, 2]


def test_read_only_and_edge_inputs():
  ro = np.arange(3, dtype=np.float32)
  ro.flags.writeable = False
  t = from_dlpack(ro)  # cannot be shared writable: a copy
  assert t.tolist() == [0, 1, 2]
  assert from_dlpack(np.zeros((0, 2), np.float32)).shape == (0, 2)
  assert from_dlpack(np.array(2.5)).shape == () and from_dlpack(np.array(2.5)).item() == 2.5
  with pytest.raises(TypeError):
    from_dlpack(np.zeros(2, np.complex64))


def test_from_blob_at_an_address():
  a = np.arange(4, dtype=np.float32)
  t = Tensor.from_blob(a.ctypes.data, (2, 2), dtype=dtypes.float32, device="CPU")
  assert t.tolist() == [[0, 1], [2, 3]]
  a[3] = 30
  assert t.sum().item() == 33
  with pytest.raises(RuntimeError, match="negative dimension"):
    Tensor.from_blob(a.ctypes.data, (-1,), device="CPU")
