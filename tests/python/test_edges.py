"""Issue 17: gradients at 0, at ties and at the edges of each op's domain, pow at zero/infinite bases, NaN in
max/min/argmax, arange with a NaN bound and int linspace, all against PyTorch."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from tinygrad_cpp import Tensor

INF, NAN = math.inf, math.nan


def grads(tiny_fn, torch_fn, *vals):
  """Forward values and every input's gradient of sum(f(inputs)), from tinygrad_cpp and from torch."""
  xs = [Tensor(v, requires_grad=True) for v in vals]
  ts = [torch.tensor(v, requires_grad=True) for v in vals]
  out, tout = tiny_fn(*xs), torch_fn(*ts)
  fwd = out.numpy()
  out.sum().backward()
  tout.sum().backward()
  return fwd, tout.detach().numpy(), [x.grad.numpy() for x in xs], [t.grad.numpy() for t in ts]


def check(tiny_fn, torch_fn, *vals, rtol=1e-4, atol=1e-6):
  fwd, tfwd, g, tg = grads(tiny_fn, torch_fn, *vals)
  np.testing.assert_allclose(fwd, tfwd, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"forward at {vals}")
  for i, (a, b) in enumerate(zip(g, tg)):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"gradient {i} at {vals}")


EDGES = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 6.0, 1e-30, 100.0, -100.0, INF, -INF]
UNARY = {
  "sigmoid": torch.sigmoid, "tanh": torch.tanh, "silu": F.silu, "swish": F.silu,
  "gelu": lambda x: F.gelu(x, approximate="tanh"), "quick_gelu": lambda x: x * torch.sigmoid(1.702 * x),
  "relu": torch.relu, "abs": torch.abs, "sqrt": torch.sqrt, "log": torch.log, "exp": torch.exp, "sin": torch.sin,
  "cos": torch.cos, "asin": torch.asin, "acos": torch.acos, "atan": torch.atan, "sinh": torch.sinh,
  "cosh": torch.cosh, "asinh": torch.asinh, "acosh": torch.acosh, "atanh": torch.atanh, "erf": torch.erf,
  "softplus": F.softplus, "mish": F.mish, "elu": F.elu, "celu": F.celu, "selu": F.selu, "leaky_relu": F.leaky_relu,
  "relu6": F.relu6, "hardswish": F.hardswish, "hardsigmoid": F.hardsigmoid, "hardtanh": F.hardtanh,
  "softsign": F.softsign, "logsigmoid": F.logsigmoid, "square": torch.square, "rsqrt": torch.rsqrt,
  "reciprocal": torch.reciprocal, "sign": torch.sign, "floor": torch.floor, "ceil": torch.ceil,
  "round": torch.round, "trunc": torch.trunc,
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_gradient_at_edges(name):
  # 0, -0, the kinks of relu6/hardswish/hardsigmoid/hardtanh, tiny, large and infinite inputs
  # torch's hardswish(-inf) is -inf * 0 = nan; it is 0 here (the function is 0 below -3), gradient 0 in both
  edges = [x for x in EDGES if not (name == "hardswish" and x == -INF)]
  check(lambda x: getattr(x, name)(), UNARY[name], edges)


def test_hardswish_at_minus_inf():
  x = Tensor([-INF], requires_grad=True)
  y = x.hardswish()
  y.sum().backward()
  assert y.tolist() == [0.0] and x.grad.tolist() == [0.0]


def test_sigmoid_gradient_at_exactly_zero():  # the example: 0 through |x| where the true value is 0.25
  x = Tensor([0.0], requires_grad=True)
  x.sigmoid().sum().backward()
  assert x.grad.tolist() == [0.25]


@pytest.mark.parametrize("low,high", [(300, 400), (-400, -300)], ids=str)
def test_sigmoid_extreme_gradient_is_zero_not_nan(low, high):
  for v in [low, high, 1e30 * np.sign(low)]:
    x = Tensor([float(v)], requires_grad=True)
    x.sigmoid().sum().backward()
    assert x.grad.tolist() == [0.0]


BASES = [-INF, -2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, INF]
EXPONENTS = [-INF, -2.0, -1.0, -0.3, 0.0, 0.3, 1.0, 2.0, 3.0, INF]


def test_pow_tensor_exponent_grid():  # both gradients of b ** e over zero, negative and infinite bases
  b = [x for x in BASES for _ in EXPONENTS]
  e = [y for _ in BASES for y in EXPONENTS]
  check(lambda x, y: x ** y, lambda x, y: x ** y, b, e)


@pytest.mark.parametrize("c", [-2, -1, 0, 0.3, 1, 2, 2.0, 1.5, 3.0, -0.5, 0.5])
def test_pow_const_direct(c):  # tinygrad's test_pow_const_direct, plus a finite grid
  for x in [0.0, 1.0, INF, 2.0, -1.0, -2.0] + ([-INF] if c not in (0.5, -0.5, 1.5) else []):
    check(lambda t: t ** c, lambda t: t ** c, [x])


def test_x_squared_gradient_at_one():  # the example: x ** 2.0 had gradient 0 at x = 1
  for two in [2.0, Tensor([2.0])]:
    x = Tensor([1.0], requires_grad=True)
    (x ** two).sum().backward()
    assert x.grad.tolist() == [2.0]


@pytest.mark.parametrize("base", [0.3, 2.0, 0.5])
def test_scalar_base_pow(base):
  check(lambda t: base ** t, lambda t: base ** t, [-2.0, -1.0, 0.0, 1.0, 2.0, 3.0])


def test_pow_zero_tensor():  # tinygrad's test_pow_zero_tensor / test_pow_zero_const
  for y in [0.0, 0.3, -0.3]:
    check(lambda a, b: a ** b, lambda a, b: a ** b, [0.0], [y])
  check(lambda a: a ** -1.0, lambda a: a ** -1.0, [-1.0, 0.0, 1.0])


def test_ties_and_clamp():
  check(lambda a, b: a.maximum(b), torch.maximum, [1.0, 2.0, 3.0, 0.0], [1.0, 1.0, 4.0, -0.0])
  check(lambda a, b: a.minimum(b), torch.minimum, [1.0, 2.0, 3.0, 0.0], [1.0, 1.0, 4.0, -0.0])
  check(lambda a: a.max(), torch.amax, [1.0, 3.0, 3.0, 0.0])
  check(lambda a: a.min(), torch.amin, [1.0, 0.0, 3.0, 0.0])
  check(lambda a: a.clamp(0.0, 1.0), lambda a: a.clamp(0.0, 1.0), [-1.0, 0.0, 0.5, 1.0, 2.0])


def test_prod_and_std_edges():
  check(lambda a: a.prod(), torch.prod, [1.0, 0.0, 2.0])
  check(lambda a: a.prod(), torch.prod, [0.0, 0.0, 2.0])
  check(lambda a: a.std(), torch.std, [1.0, 1.0, 1.0])
  check(lambda a: a.std(axis=(0, 1)), lambda a: a.std(dim=(0, 1)), [[2.0, 2.0], [2.0, 2.0]])


def test_nan_in_max_min_argmax():
  rows = [[1, NAN, 3], [NAN, 1, 3], [1, 3, NAN], [1, 2, 3], [NAN, NAN, 0]]
  t, tt = Tensor(rows), torch.tensor(rows)
  np.testing.assert_equal(t.max(axis=1).numpy(), tt.amax(dim=1).numpy())
  np.testing.assert_equal(t.min(axis=1).numpy(), tt.amin(dim=1).numpy())
  np.testing.assert_equal(t.argmax(axis=1).numpy(), tt.argmax(dim=1).numpy())
  np.testing.assert_equal(t.argmin(axis=1).numpy(), tt.argmin(dim=1).numpy())
  assert math.isnan(Tensor([1, NAN, 3]).max().item()) and Tensor([1, NAN, 3]).argmax().item() == 1
  a, b = [NAN, 1.0, NAN, 2.0], [1.0, NAN, NAN, 3.0]
  for x, y in [(a, b), (b, a)]:
    np.testing.assert_equal(Tensor(x).maximum(Tensor(y)).numpy(), torch.maximum(torch.tensor(x), torch.tensor(y)).numpy())
    np.testing.assert_equal(Tensor(x).minimum(Tensor(y)).numpy(), torch.minimum(torch.tensor(x), torch.tensor(y)).numpy())


@pytest.mark.parametrize("args", [(0, NAN), (NAN, 3), (0, 3, NAN), (0, INF), (-INF, 0)], ids=str)
def test_arange_non_finite_raises(args):
  with pytest.raises(RuntimeError):
    torch.arange(*args)
  with pytest.raises(ValueError, match="arange: start, stop and step must be finite"):
    Tensor.arange(*args)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_int_linspace(dtype):
  # torch's values where torch 1.13 agrees with itself (tinygrad's test_linspace cases, 2^31 - 1)
  for a, b, n in [(5, 10, 3), (5, 10, 20), (-10, -5, 3), (0, 10, 4), (10, 0, 4), (-3, 3, 4), (0, 2**31 - 1, 3)]:
    assert Tensor.linspace(a, b, n, dtype=dtype).tolist() == torch.linspace(a, b, n, dtype=getattr(torch, dtype)).tolist()
  # elsewhere the exact value from the nearer end, truncated toward zero (torch 1.13's int kernel gives -1 for
  # -0.26 at (5, -5, 20) index 10 but -3 for -3.42 at index 16)
  for a, b, n in [(5, -5, 20), (-7, 7, 6), (1, -1, 5)]:
    step = (b - a) / (n - 1)
    want = [math.trunc(a + step * i if i < n // 2 else b - step * (n - 1 - i)) for i in range(n)]
    assert Tensor.linspace(a, b, n, dtype=dtype).tolist() == want


# ---- Python protocol edges ----
from tinygrad_cpp import dtypes  # noqa: E402


@pytest.mark.parametrize("ndim", [31, 32, 33, 64, 65, 100, 128])
def test_numpy_of_many_dims_is_an_array_or_a_clean_error(ndim):  # > 64 aborted the interpreter, 65..128 gave 0-d
  t = Tensor.ones(*([1] * (ndim - 1) + [2]))
  try:
    a = np.zeros([1] * (ndim - 1) + [2])
  except ValueError as e:  # numpy's own limit (32 in numpy 1.x, 64 in 2.x)
    with pytest.raises(ValueError, match=str(e).split(",")[0]):
      t.numpy()
    return
  assert a.shape == t.numpy().shape and t.numpy().sum() == 2


def test_tensor_from_bytes_reinterprets():
  raw = np.array([1.5, -2.0, 3.25], dtype=np.float32).tobytes()
  assert Tensor(raw).dtype == dtypes.uint8 and Tensor(raw).tolist() == list(raw)
  assert Tensor(raw, dtype=dtypes.float32).tolist() == [1.5, -2.0, 3.25]
  assert Tensor(np.array([7, -9], np.int64).tobytes(), dtype=dtypes.int64).tolist() == [7, -9]
  with pytest.raises(ValueError, match="not a whole number of float"):
    Tensor(raw[:5], dtype=dtypes.float32)


def test_scalar_conversions():
  assert float(Tensor([2.5])) == 2.5 and int(Tensor([[3.7]])) == 3 and int(Tensor(7)) == 7
  assert bool(Tensor([0.0])) is False and bool(Tensor(2)) is True and bool(Tensor([[True]])) is True
  assert float(Tensor([2.5])) == float(torch.tensor([2.5])) and int(Tensor([-3.7])) == int(torch.tensor([-3.7]))
  for f in (float, int):
    with pytest.raises(ValueError, match=f"{f.__name__}\\(\\): only a tensor with one element.*shape \\(2,\\)"):
      f(Tensor([1.0, 2.0]))
  with pytest.raises(RuntimeError, match="ambiguous"):
    bool(Tensor([1, 2]))
  with pytest.raises(ValueError, match="one element"):
    float(Tensor([]))


def test_error_hints_use_python_spelling():
  with pytest.raises(RuntimeError) as e:
    Tensor([1.0]).sum().backward()
  assert "requires_grad=True" in str(e.value) and "{." not in str(e.value)
  from tinygrad_cpp.nn.state import load_state_dict

  class M:
    def __init__(self): self.w = Tensor([1.0])
  with pytest.raises(RuntimeError) as e:
    load_state_dict(M(), {})
  assert "strict=False" in str(e.value) and "strict=false" not in str(e.value)


def test_exact_64_bit_constants():
  assert Tensor(2**64 - 1, dtype=dtypes.uint64).item() == 2**64 - 1
  assert Tensor([2**64 - 1, 2**64 - 2], dtype=dtypes.uint64).tolist() == [2**64 - 1, 2**64 - 2]
  assert (Tensor([2**64 - 1], dtype=dtypes.uint64) // (2**64 - 1)).item() == 1
  assert (Tensor([2**64 - 2], dtype=dtypes.uint64) // 3).item() == (2**64 - 2) // 3
  assert Tensor(2**63 - 1, dtype=dtypes.int64).item() == 2**63 - 1 and Tensor(-2**63, dtype=dtypes.int64).item() == -2**63
  assert (Tensor([2**62], dtype=dtypes.int64) + (2**62 - 1)).item() == 2**63 - 1
  assert Tensor.full((2,), 2**63 - 7, dtype=dtypes.int64).tolist() == [2**63 - 7] * 2
  assert Tensor(np.uint64(2**64 - 1), dtype=dtypes.uint64).item() == 2**64 - 1
