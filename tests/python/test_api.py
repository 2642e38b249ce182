"""The Python API's forms: construction, dtypes, numpy / DLPack interop, properties, Device and Context, errors
as Python exceptions, and the Python-side conveniences (__setitem__, in-place ops, iteration)."""
import os

import numpy as np
import pytest
import torch
from tinygrad_cpp import Tensor, dtypes, Device, Context, GlobalCounters, from_dlpack, nn


def test_readme_forms(capfd):
  t = Tensor([[1, 2, 3], [4, 5, 6]], dtype=dtypes.float32)
  np.testing.assert_equal((t + 2).sum(axis=1, keepdim=True).numpy(), [[12.0], [21.0]])
  assert t.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
  assert t.shape == (2, 3) and t.dtype == dtypes.float32 and t.max().item() == 6.0
  out = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3)) @ Tensor.ones(3, 4)
  np.testing.assert_equal(out.numpy(), np.arange(6, dtype=np.float32).reshape(2, 3) @ np.ones((3, 4), np.float32))
  x = Tensor.randn(3, 4, requires_grad=True)
  x.relu().sum().backward()
  np.testing.assert_equal(x.grad.numpy(), (x.numpy() > 0).astype(np.float32))
  capfd.readouterr()
  with Context(DEBUG=2): (t * t).realize()
  err = capfd.readouterr()
  assert "E_" in err.out + err.err


@pytest.mark.parametrize("data,dtype,shape", [
  (1, dtypes.int32, ()), (1.5, dtypes.float32, ()), (True, dtypes.bool, ()), ([1, 2], dtypes.int32, (2,)),
  ([1.0, 2], dtypes.float32, (2,)), ([[True], [False]], dtypes.bool, (2, 1)), ([], dtypes.float32, (0,)),
  ([[], []], dtypes.float32, (2, 0)), ((1, 2, 3), dtypes.int32, (3,)), (None, dtypes.float32, (0,)),
])
def test_construction(data, dtype, shape):
  t = Tensor(data)
  assert t.dtype == dtype and t.shape == shape
  if data is not None: assert t.tolist() == (list(data) if isinstance(data, tuple) else data)


def test_construction_dtype_device_kwargs():
  t = Tensor([1, 2, 3], dtype=dtypes.float16, device="CPU")
  assert t.dtype == dtypes.half and t.device == "CPU" and t.tolist() == [1.0, 2.0, 3.0]
  assert Tensor([1.7, -2.2], dtype="int32").tolist() == [1, -2]
  assert Tensor([1, 2], dtype=np.float64).dtype == dtypes.float64
  assert Tensor([1.0], requires_grad=True).requires_grad
  assert Tensor(2**40, dtype=dtypes.int64).item() == 2**40
  assert Tensor([2**40], dtype=dtypes.int64).item() == 2**40


@pytest.mark.parametrize("np_dtype,dtype", [(np.float32, dtypes.float32), (np.float64, dtypes.float64), (np.float16, dtypes.float16),
                                            (np.int8, dtypes.int8), (np.uint8, dtypes.uint8), (np.int16, dtypes.int16),
                                            (np.int32, dtypes.int32), (np.int64, dtypes.int64), (np.uint32, dtypes.uint32),
                                            (np.uint64, dtypes.uint64), (np.bool_, dtypes.bool)])
def test_numpy_roundtrip(np_dtype, dtype):
  a = (np.arange(24).reshape(2, 3, 4) % 7).astype(np_dtype)
  t = Tensor(a)
  assert t.dtype == dtype and t.shape == (2, 3, 4)
  b = t.numpy()
  assert b.dtype == np.dtype(np_dtype) and b.shape == a.shape
  np.testing.assert_equal(b, a)
  np.testing.assert_equal(np.asarray(t), a)


def test_numpy_views_and_edge_shapes():
  a = np.arange(20, dtype=np.float32).reshape(4, 5)
  np.testing.assert_equal(Tensor(a[:, ::2]).numpy(), a[:, ::2])  # non-contiguous input
  np.testing.assert_equal(Tensor(a.T).numpy(), a.T)
  assert Tensor(np.float32(2.5)).shape == () and Tensor(np.array(3.0)).item() == 3.0
  assert Tensor(np.zeros((0, 3), np.float32)).numpy().shape == (0, 3)
  assert Tensor(np.zeros((2, 0), np.int32)).numpy().shape == (2, 0)
  assert Tensor.ones(2, 3)[0, 0].numpy().shape == ()
  assert Tensor(b"\x01\x02").tolist() == [1, 2] and Tensor(b"\x01").dtype == dtypes.uint8
  assert Tensor([1.0, 2.0]).to("CPU").contiguous().numpy().flags["C_CONTIGUOUS"]
  assert Tensor(torch.arange(4)).tolist() == [0, 1, 2, 3]  # through __array__


def test_dlpack():
  t = Tensor([[1.0, 2.0], [3.0, 4.0]], device="CPU")
  assert t.__dlpack_device__() == (1, 0)
  tt = torch.from_dlpack(t)
  assert tt.shape == (2, 2) and tt.tolist() == [[1.0, 2.0], [3.0, 4.0]]
  back = from_dlpack(torch.arange(6, dtype=torch.int64).reshape(2, 3))
  assert back.dtype == dtypes.int64 and back.tolist() == [[0, 1, 2], [3, 4, 5]]
  assert Tensor.from_dlpack(np.arange(3, dtype=np.float32)).tolist() == [0.0, 1.0, 2.0]
  assert bytes(Tensor([1, 2], dtype=dtypes.uint8).data()) == b"\x01\x02"


def test_creation_functions():
  assert Tensor.zeros(2, 3).shape == (2, 3) and Tensor.zeros((2, 3)).shape == (2, 3) and Tensor.zeros([4]).shape == (4,)
  assert Tensor.ones(2, dtype=dtypes.int32).tolist() == [1, 1]
  assert Tensor.full((2, 2), 7).tolist() == [[7, 7], [7, 7]] and Tensor.full((1,), 1.5).dtype == dtypes.float32
  assert Tensor.arange(5).tolist() == [0, 1, 2, 3, 4] and Tensor.arange(5).dtype == dtypes.int32
  assert Tensor.arange(1, 2, 0.25).tolist() == [1.0, 1.25, 1.5, 1.75]
  assert Tensor.arange(5, 0, -2).tolist() == [5, 3, 1]
  assert Tensor.eye(3).tolist() == np.eye(3).tolist() and Tensor.eye(2, 3).tolist() == np.eye(2, 3).tolist()
  assert Tensor.empty(3, 2).shape == (3, 2)
  np.testing.assert_allclose(Tensor.linspace(0, 1, 5).numpy(), np.linspace(0, 1, 5), atol=1e-6)
  t = Tensor([[1.0, 2.0]])
  assert t.zeros_like().tolist() == [[0.0, 0.0]] and t.ones_like().dtype == dtypes.float32
  assert t.full_like(3).tolist() == [[3.0, 3.0]] and t.rand_like().shape == (1, 2)


def test_random():
  Tensor.manual_seed(42)
  a = Tensor.rand(1000).numpy()
  Tensor.manual_seed(42)
  assert (Tensor.rand(1000).numpy() == a).all()
  assert 0 <= a.min() and a.max() < 1 and abs(a.mean() - 0.5) < 0.05
  n = Tensor.randn(2000).numpy()
  assert abs(n.mean()) < 0.1 and abs(n.std() - 1) < 0.1
  r = Tensor.randint(100, low=3, high=7).numpy()
  assert r.min() >= 3 and r.max() < 7
  assert Tensor.normal(10, 10, mean=5.0, std=0.1).numpy().mean() == pytest.approx(5.0, abs=0.1)
  u = Tensor.uniform(500, low=-2.0, high=-1.0).numpy()
  assert u.min() >= -2 and u.max() < -1
  assert sorted(Tensor.randperm(6).tolist()) == list(range(6))
  assert Tensor.kaiming_uniform(4, 5).shape == (4, 5) and Tensor.glorot_uniform(3, 3).shape == (3, 3)


def test_properties_and_protocols():
  t = Tensor.ones(2, 3, 4)
  assert t.ndim == 3 and t.numel() == 24 and t.element_size() == 4 and t.nbytes() == 96 and len(t) == 2
  assert t.size() == (2, 3, 4) and t.size(1) == 3
  assert "Tensor" in repr(t) and t.device == Device.DEFAULT
  assert [r.shape for r in t] == [(3, 4), (3, 4)]
  with pytest.raises(RuntimeError, match="ambiguous"): bool(t)  # torch: one element has a truth value, 24 do not
  with pytest.raises(TypeError): len(Tensor(1.0))
  assert len({t, t}) == 1  # hashable by identity
  assert repr(dtypes.float32) == "dtypes.float" and dtypes.float32.itemsize == 4 and dtypes.is_float(dtypes.half)
  assert dtypes.int64 != dtypes.int32 and dtypes.default_float == dtypes.float32 and dtypes.from_py(1.0) == dtypes.float32


def test_promotion_with_python_scalars():
  i8 = Tensor([1, 2], dtype=dtypes.int8)
  assert (i8 * 300).dtype == dtypes.int8 and (2 * i8).dtype == dtypes.int8
  assert (Tensor([1, 2]) * 1.5).dtype == dtypes.float32 and (Tensor([1, 2]) / 2).dtype == dtypes.float32
  assert (Tensor([True, False]) + 1).dtype == dtypes.int32
  assert (Tensor([1, 2], dtype=dtypes.float16) + 1.0).dtype == dtypes.float16
  assert (Tensor([1.0]) + Tensor([1], dtype=dtypes.int64)).dtype == dtypes.float32


def test_setitem_inplace_assign():
  t = Tensor.zeros(3, 4).contiguous().realize()
  t[1] = 5.0
  t[:, 2] = Tensor([1.0, 2.0, 3.0])
  t[0, 0:2] = [7.0, 8.0]
  want = np.zeros((3, 4), np.float32); want[1] = 5; want[:, 2] = [1, 2, 3]; want[0, 0:2] = [7, 8]
  np.testing.assert_equal(t.numpy(), want)
  a = Tensor([1.0, 2.0]).contiguous().realize()
  a += 1
  a *= Tensor([2.0, 3.0])
  a -= 1
  assert a.tolist() == [3.0, 8.0]
  a.assign([0.5, 0.25])
  assert a.tolist() == [0.5, 0.25]
  a.assign(3)
  assert a.tolist() == [3.0, 3.0]


def test_autograd_api():
  x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
  assert x.grad is None
  (x * x).sum().backward()
  assert x.grad.tolist() == [2.0, 4.0, 6.0]
  x.grad = None
  assert x.grad is None
  y = Tensor([2.0], requires_grad=True)
  (g,) = (y * y * y).sum().gradient([y])
  assert g.tolist() == [12.0] and y.grad is None
  assert not x.detach().requires_grad
  z = Tensor([1.0, -1.0])
  z.requires_grad = True
  z.relu().sum().backward(); assert z.grad.tolist() == [1.0, 0.0]
  w = Tensor.ones(2, 2, requires_grad=True)
  (w * 3).backward(Tensor.ones(2, 2)); assert w.grad.tolist() == [[3.0, 3.0], [3.0, 3.0]]


def test_device_context_counters():
  # DEV when set, else CUDA with a GPU, else CPU (the suite also runs under DEV=CUDA on a GPU machine)
  assert Device.DEFAULT == Device.canonicalize(os.environ.get("DEV", Device.DEFAULT)) and Device.canonicalize("cpu") == "CPU"
  assert Device.DEFAULT in ("CPU", "CUDA") or "DEV" in os.environ
  assert Tensor([1, 2], device="INTERP").device == "INTERP" and (Tensor([1, 2], device="INTERP") * 2).tolist() == [2, 4]
  GlobalCounters.reset()
  (Tensor.rand(8) + 1).realize()
  assert GlobalCounters.kernel_count >= 1
  with Context(NOOPT=1, DEBUG=0): assert (Tensor.ones(4, 4) + 1).sum().item() == 32.0
  with pytest.raises(ValueError, match="unknown knob"): Context(NOT_A_KNOB=1)


def test_training_scope():
  assert not Tensor.training
  with Tensor.train():
    assert Tensor.training
    with Tensor.test(): assert not Tensor.training
  assert not Tensor.training
  with Context(TRAINING=1):  # tinygrad 0.14's spelling of the same switch
    assert Tensor.training
    w = Tensor.ones(3, requires_grad=True)
    opt = nn.optim.SGD([w], lr=0.5)
    w.sum().backward()
    opt.step()
    assert w.tolist() == [0.5, 0.5, 0.5]
  assert not Tensor.training
  with pytest.raises(RuntimeError, match="training"):
    opt.step()


def test_bad_input_raises():
  with pytest.raises(RuntimeError, match="shape"): Tensor.ones(2, 3) + Tensor.ones(4, 5)
  with pytest.raises(RuntimeError): Tensor.ones(2, 3).reshape(4, 2)
  with pytest.raises(RuntimeError): Tensor.ones(2, 3).sum(axis=5)
  with pytest.raises(RuntimeError): Tensor.ones(2, 3).permute(0, 0)
  with pytest.raises(RuntimeError, match="unknown device"): Tensor([1], device="NOPE")
  with pytest.raises(RuntimeError, match="unknown dtype"): Tensor([1], dtype="float7")
  with pytest.raises(RuntimeError): Tensor.ones(2, 3).item()
  with pytest.raises(RuntimeError): Tensor.ones(2, 3) @ Tensor.ones(2, 3)
  for ragged in ([[1, 2], [3]], [[1, [2]]], [[[1]], [2]], [1, [2]], [[1], 2]):
    with pytest.raises(ValueError, match="rectangular"): Tensor(ragged)
  with pytest.raises(TypeError): Context(DEBUG="x")
  with pytest.raises(TypeError): Tensor([object()])
  with pytest.raises(TypeError): Tensor({"a": 1})
  with pytest.raises(IndexError): Tensor.ones(2, 3)[2]
  with pytest.raises(IndexError): Tensor.ones(2, 3)[0, 0, 0]
  with pytest.raises(TypeError): Tensor.ones(2) + "a"
  with pytest.raises(RuntimeError): Tensor.ones(2).div(Tensor.ones(2), rounding_mode="ceil")
  with pytest.raises(OverflowError): Tensor([2**70])


def test_deep_chain_realizes_and_backprops():
  # 20,000 ops deep: scheduling, autograd and freeing walk the graph with explicit stacks (this overflowed the
  # stack before), and the fused chain is cut into kernels short enough to compile.
  n = 20000
  x0 = Tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
  w = Tensor([1.0, 1.0, 1.0, 1.0], requires_grad=True)
  x = x0
  for _ in range(n): x = x + w
  x.sum().backward()
  np.testing.assert_equal(x.numpy(), [1 + n, 2 + n, 3 + n, 4 + n])
  np.testing.assert_equal(w.grad.numpy(), [n] * 4)
  np.testing.assert_equal(x0.grad.numpy(), [1] * 4)
  y = Tensor([0.5, 1.0])
  for _ in range(n): y = y * 1.0001
  np.testing.assert_allclose(y.numpy(), np.float32([0.5, 1.0]) * np.float32(1.0001) ** n, rtol=1e-3)


def test_context_is_per_thread():
  # Knobs are per thread: a Context in one thread leaves another's settings alone.
  import threading
  from tinygrad_cpp import _C
  seen = []
  with Context(NOOPT=1):
    t = threading.Thread(target=lambda: seen.append(_C.context_value("NOOPT")))
    t.start()
    t.join()
    assert _C.context_value("NOOPT") == 1
  assert seen == [int(os.environ.get("NOOPT") or 0)]
