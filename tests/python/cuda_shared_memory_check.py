"""DLPack with PyTorch on a CUDA GPU, both ways, without a copy (run where a GPU is: `python3
cuda_shared_memory_check.py`, or by pytest naming this file; the CPU suite does not collect it).
Each check writes through one side and reads through the other."""
import torch

from tinygrad_cpp import Tensor, dtypes, from_dlpack


def test_tensor_to_torch_on_the_gpu():
  t = (Tensor.arange(6, device="CUDA").reshape(2, 3).cast(dtypes.float32) * 2).realize()
  assert t.__dlpack_device__() == (2, 0)
  tt = torch.from_dlpack(t)
  assert tt.is_cuda and tt.device.index == 0 and tt.tolist() == [[0, 2, 4], [6, 8, 10]]
  tt.add_(1)  # torch's kernel on its stream, then ours read the same memory
  assert t.tolist() == [[1, 3, 5], [7, 9, 11]]
  view = t.permute(1, 0)[1:]  # a strided window: still the same memory
  tv = torch.from_dlpack(view)
  assert tv.stride() == (1, 3) and tv.data_ptr() == tt.data_ptr() + 4


def test_torch_to_tensor_on_the_gpu():
  x = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)
  t = from_dlpack(x)
  assert t.device == "CUDA" and t.shape == (3, 4)
  assert (t * 2).tolist() == (x * 2).tolist()
  assert from_dlpack(x.T).tolist() == x.T.tolist() and from_dlpack(x[:, ::2]).tolist() == x[:, ::2].tolist()
  t.assign(t + 100).realize()  # our kernel writes torch's memory
  torch.cuda.synchronize()
  assert x[0, 0].item() == 100 and x[2, 3].item() == 111


def test_torch_side_stream_work_is_ordered_before_ours():
  s = torch.cuda.Stream()
  with torch.cuda.stream(s):
    x = torch.full((1 << 22,), 3.0, device="cuda")
    for _ in range(20): x.mul_(1.0)  # queued work on a side stream
    t = from_dlpack(x)  # asks torch to order it before the legacy default stream
  assert t.sum().item() == 3.0 * (1 << 22)


def test_every_dtype_both_ways_on_the_gpu():
  for td, d in [(torch.bool, dtypes.bool), (torch.int8, dtypes.int8), (torch.uint8, dtypes.uint8),
                (torch.int16, dtypes.int16), (torch.int32, dtypes.int32), (torch.int64, dtypes.int64),
                (torch.float16, dtypes.float16), (torch.bfloat16, dtypes.bfloat16), (torch.float32, dtypes.float32),
                (torch.float64, dtypes.float64)]:
    x = (torch.arange(6, device="cuda") % 3).to(td)
    t = from_dlpack(x)
    assert t.dtype == d and t.tolist() == x.tolist(), td
    back = torch.from_dlpack(t)
    assert back.dtype == td and back.data_ptr() == x.data_ptr(), td


if __name__ == "__main__":
  for name, fn in list(globals().items()):
    if name.startswith("test_"):
      fn()
      print("ok", name)
