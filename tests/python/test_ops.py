"""Every op against PyTorch (CPU): forward values and gradients on random inputs, with 0- and 1-sized dims,
broadcasting and negative axes, in tinygrad's helper_test_op style."""
import math
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from op_helpers import helper_test_op
from tinygrad_cpp import Tensor

SHAPES_UNARY = [[(45, 65)], [()], [(0,)], [(1, 3, 1)], [(2, 0, 3)]]

# name -> (torch fn, tinygrad fn or None for the same, input range, forward_only)
UNARY = {
  "neg": (lambda x: -x, None, (-2, 2), False),
  "exp": (torch.exp, Tensor.exp, (-2, 2), False),
  "log": (torch.log, Tensor.log, (0.1, 3), False),
  "exp2": (torch.exp2, Tensor.exp2, (-2, 2), False),
  "log2": (torch.log2, Tensor.log2, (0.1, 3), False),
  "sqrt": (torch.sqrt, Tensor.sqrt, (0.1, 3), False),
  "rsqrt": (torch.rsqrt, Tensor.rsqrt, (0.1, 3), False),
  "sin": (torch.sin, Tensor.sin, (-3, 3), False),
  "cos": (torch.cos, Tensor.cos, (-3, 3), False),
  "tan": (torch.tan, Tensor.tan, (-1.2, 1.2), False),
  "reciprocal": (torch.reciprocal, Tensor.reciprocal, (0.5, 3), False),
  "relu": (torch.relu, Tensor.relu, (-2, 2), False),
  "abs": (torch.abs, Tensor.abs, (-2, 2), False),
  "square": (torch.square, Tensor.square, (-2, 2), False),
  "asin": (torch.asin, Tensor.asin, (-0.9, 0.9), False),
  "acos": (torch.acos, Tensor.acos, (-0.9, 0.9), False),
  "atan": (torch.atan, Tensor.atan, (-3, 3), False),
  "sinh": (torch.sinh, Tensor.sinh, (-2, 2), False),
  "cosh": (torch.cosh, Tensor.cosh, (-2, 2), False),
  "tanh": (torch.tanh, Tensor.tanh, (-3, 3), False),
  "asinh": (torch.asinh, Tensor.asinh, (-3, 3), False),
  "acosh": (torch.acosh, Tensor.acosh, (1.1, 3), False),
  "atanh": (torch.atanh, Tensor.atanh, (-0.9, 0.9), False),
  "erf": (torch.erf, Tensor.erf, (-2, 2), False),
  "sigmoid": (torch.sigmoid, Tensor.sigmoid, (-4, 4), False),
  "gelu": (lambda x: F.gelu(x, approximate="tanh"), Tensor.gelu, (-3, 3), False),
  "quick_gelu": (lambda x: x * torch.sigmoid(1.702 * x), Tensor.quick_gelu, (-3, 3), False),
  "silu": (F.silu, Tensor.silu, (-3, 3), False),
  "selu": (F.selu, Tensor.selu, (-3, 3), False),
  "mish": (F.mish, Tensor.mish, (-3, 3), False),
  "hardswish": (F.hardswish, Tensor.hardswish, (-4, 4), False),
  "hardsigmoid": (F.hardsigmoid, Tensor.hardsigmoid, (-4, 4), False),
  "relu6": (F.relu6, Tensor.relu6, (-3, 8), False),
  "softsign": (F.softsign, Tensor.softsign, (-3, 3), False),
  "logsigmoid": (F.logsigmoid, Tensor.logsigmoid, (-4, 4), False),
  "elu": (F.elu, Tensor.elu, (-3, 3), False),
  "celu": (lambda x: F.celu(x, 0.7), lambda x: x.celu(0.7), (-3, 3), False),
  "leaky_relu": (lambda x: F.leaky_relu(x, 0.05), lambda x: x.leaky_relu(0.05), (-3, 3), False),
  "softplus": (F.softplus, Tensor.softplus, (-3, 3), False),
  "hardtanh": (lambda x: F.hardtanh(x, -0.5, 1.5), lambda x: x.hardtanh(-0.5, 1.5), (-3, 3), False),
  "sign": (torch.sign, Tensor.sign, (-2, 2), True),
  "floor": (torch.floor, Tensor.floor, (-3, 3), True),
  "ceil": (torch.ceil, Tensor.ceil, (-3, 3), True),
  "trunc": (torch.trunc, Tensor.trunc, (-3, 3), True),
  "round": (torch.round, Tensor.round, (-3, 3), True),
}


@pytest.mark.parametrize("shps", SHAPES_UNARY, ids=lambda s: str(s[0]))
@pytest.mark.parametrize("name", list(UNARY))
def test_unary(name, shps):
  tf, tg, (lo, hi), fwd = UNARY[name]
  helper_test_op(shps, tf, tg or tf, low=lo, high=hi, forward_only=fwd, atol=1e-5, grad_atol=1e-4)


def test_unary_special_values():
  vals = [[float("nan"), float("inf"), -float("inf"), 0.0, -1.5, 2.5, 0.5, -0.5]]
  helper_test_op(None, torch.isnan, Tensor.isnan, vals=vals, forward_only=True)
  helper_test_op(None, torch.isinf, Tensor.isinf, vals=vals, forward_only=True)
  helper_test_op(None, torch.isposinf, lambda x: x.isinf(detect_negative=False), vals=vals, forward_only=True)
  helper_test_op(None, torch.round, Tensor.round, vals=[[0.5, 1.5, 2.5, -0.5, -1.5, -2.5]], forward_only=True)
  helper_test_op(None, torch.relu, Tensor.relu, vals=[[-1.0, 0.0, 1.0]])


@pytest.mark.parametrize("low,high", [(300, 400), (-400, -300)], ids=str)
@pytest.mark.parametrize("name", ["sigmoid", "tanh", "quick_gelu", "silu"])
def test_saturated_activations_have_finite_gradients(name, low, high):
  tf = {"sigmoid": torch.sigmoid, "tanh": torch.tanh, "quick_gelu": lambda x: x * torch.sigmoid(1.702 * x),
        "silu": F.silu}[name]
  helper_test_op([(45, 65)], tf, getattr(Tensor, name), low=low, high=high)


def test_gelu_saturated():
  for low, high in [(300, 400), (-400, -300)]:
    helper_test_op([(45, 65)], lambda x: F.gelu(x, approximate="tanh"), Tensor.gelu, low=low, high=high)


def test_acosh_gradient_outside_its_domain():  # torch's (the textbook formula's) 1/sqrt(x^2 - 1) for x < -1 too
  helper_test_op([(45, 65)], torch.acosh, Tensor.acosh, low=-300, high=-297, grad_atol=1e-6)
  helper_test_op([(45, 65)], torch.acosh, Tensor.acosh, low=-3, high=-1.1, grad_atol=1e-5)


def test_int_pow_and_div_errors():
  with pytest.raises(RuntimeError, match="negative integer power"): Tensor([-2, 0, 2]) ** -2
  assert (Tensor([-2, 0, 2]) ** 2).tolist() == [4, 0, 4] and (2 ** Tensor([0, 3])).tolist() == [1, 8]
  with pytest.raises(RuntimeError, match="rounding_mode"): Tensor([5]).div(Tensor([2]), rounding_mode="typo")
  with pytest.raises(ValueError): Tensor.eye(-3, 3)
  with pytest.raises(ValueError): Tensor.eye(3, -3)
  helper_test_op([()], lambda x: x.prod(-1), lambda x: x.prod(-1))
  helper_test_op([()], lambda x: x.sum(-1), lambda x: x.sum(-1))


BROADCAST = [[(45, 65), (45, 65)], [(45, 65), (1, 65)], [(45, 1), (1, 65)], [(), (3,)], [(3,), ()],
             [(0, 3), (1, 3)], [(4, 1, 3), (5, 3)], [(1,), (2, 0)]]

BINARY = {
  "add": (lambda x, y: x + y, (-2, 2)),
  "sub": (lambda x, y: x - y, (-2, 2)),
  "mul": (lambda x, y: x * y, (-2, 2)),
  "div": (lambda x, y: x / y, (0.5, 2)),
  "pow": (lambda x, y: x ** y, (0.5, 2)),
  "maximum": (torch.maximum, (-2, 2)),
  "minimum": (torch.minimum, (-2, 2)),
}


@pytest.mark.parametrize("shps", BROADCAST, ids=str)
@pytest.mark.parametrize("name", list(BINARY))
def test_binary(name, shps):
  fn, (lo, hi) = BINARY[name]
  tg = {"maximum": Tensor.maximum, "minimum": Tensor.minimum}.get(name, fn)
  helper_test_op(shps, fn, tg, low=lo, high=hi, atol=1e-5)


@pytest.mark.parametrize("op", ["lt", "gt", "le", "ge", "eq", "ne"])
@pytest.mark.parametrize("shps", [[(5, 7), (5, 7)], [(5, 7), (1, 7)], [(3,), ()]], ids=str)
def test_compare(op, shps):
  fn = {"lt": lambda x, y: x < y, "gt": lambda x, y: x > y, "le": lambda x, y: x <= y, "ge": lambda x, y: x >= y,
        "eq": lambda x, y: x == y, "ne": lambda x, y: x != y}[op]
  helper_test_op(shps, fn, forward_only=True)
  helper_test_op(None, fn, vals=[[1.0, 2.0, 3.0, 2.0], [2.0, 2.0, 1.0, 2.0]], forward_only=True)
  helper_test_op(None, lambda x: fn(x, 2), vals=[[1, 2, 3]], forward_only=True)


SCALAR_FNS = {
  "x+2": lambda x: x + 2, "2+x": lambda x: 2 + x, "x-2.5": lambda x: x - 2.5, "2-x": lambda x: 2 - x,
  "x*3": lambda x: x * 3, "3*x": lambda x: 3 * x, "x/2": lambda x: x / 2, "2/x": lambda x: 2 / x,
  "x**2": lambda x: x ** 2, "x**0.5": lambda x: x ** 0.5, "2**x": lambda x: 2 ** x, "x**-1": lambda x: x ** -1,
  "-x": lambda x: -x, "x<1": lambda x: (x < 1).float() * x, "1.5>x": lambda x: (1.5 > x).float() * x,
}


@pytest.mark.parametrize("name", list(SCALAR_FNS))
def test_scalar_operands(name):
  helper_test_op([(4, 5)], SCALAR_FNS[name], low=0.5, high=2)


@pytest.mark.parametrize("shps", [[(4, 5), (4, 5)], [(3, 1), (1, 4)]], ids=str)
def test_int_division_and_mod(shps):
  np.random.seed(1)
  a = np.random.randint(-20, 20, size=shps[0]).astype(np.int32)
  b = np.random.randint(1, 7, size=shps[1]).astype(np.int32) * np.where(np.random.random(shps[1]) < 0.5, -1, 1).astype(np.int32)
  for fn in (lambda x, y: x // y, lambda x, y: x % y, lambda x, y: x * y, lambda x, y: x - y):
    helper_test_op(None, fn, vals=[a, b], forward_only=True)
  helper_test_op(None, lambda x, y: torch.div(x, y, rounding_mode="trunc"), lambda x, y: x.div(y, rounding_mode="trunc"),
                 vals=[a, b], forward_only=True)
  helper_test_op(None, lambda x, y: x / y, vals=[a, b], forward_only=True)


def test_float_floordiv_mod():
  helper_test_op([(5, 6), (5, 6)], lambda x, y: x // y, low=0.5, high=5, forward_only=True)
  helper_test_op(None, lambda x, y: torch.remainder(x, y), lambda x, y: x % y,
                 vals=[[5.5, -5.5, 3.0, -3.25], [2.0, 2.0, -1.5, -1.5]], forward_only=True)


def test_bitwise():
  a, b = np.array([0b1100, 7, -3, 255], np.int32), np.array([0b1010, 1, 5, 15], np.int32)
  for fn in (lambda x, y: x & y, lambda x, y: x | y, lambda x, y: x ^ y):
    helper_test_op(None, fn, vals=[a, b], forward_only=True)
  helper_test_op(None, lambda x: ~x, vals=[a], forward_only=True)
  helper_test_op(None, lambda x: x << 2, lambda x: x.lshift(2), vals=[a[a >= 0]], forward_only=True)
  helper_test_op(None, lambda x: x >> 1, lambda x: x.rshift(1), vals=[a[a >= 0]], forward_only=True)
  helper_test_op(None, lambda x, y: x & y, vals=[[True, False, True], [True, True, False]], forward_only=True)


@pytest.mark.parametrize("shps", [[(4, 5), (4, 5), (4, 5)], [(4, 1), (1, 5), ()], [(0, 5), (1, 5), (5,)]], ids=str)
def test_where(shps):
  helper_test_op(shps, lambda c, x, y: torch.where(c > 0, x, y), lambda c, x, y: (c > 0).where(x, y))
  helper_test_op(shps[:2], lambda c, x: torch.where(c > 0, x, 2.5), lambda c, x: (c > 0).where(x, 2.5))
  helper_test_op(shps[:1], lambda c: torch.where(c > 0, 1.0, -1.0) * c, lambda c: (c > 0).where(1.0, -1.0) * c)


def test_clamp_lerp_masked_fill():
  helper_test_op([(45, 65)], lambda x: x.clamp(-0.5, 1.2), lambda x: x.clamp(-0.5, 1.2))
  helper_test_op([(45, 65)], lambda x: x.clamp(min=0.3), lambda x: x.clip(0.3))
  helper_test_op([(45, 65)], lambda x: x.clamp(max=-0.3), lambda x: x.clip(max_=-0.3))
  helper_test_op([(4, 5), (4, 5), (4, 5)], torch.lerp, Tensor.lerp, low=0, high=1)
  helper_test_op([(4, 5), (4, 5)], lambda x, y: torch.lerp(x, y, 0.3), lambda x, y: x.lerp(y, 0.3))
  helper_test_op([(4, 5), (4, 5)], lambda x, m: x.masked_fill(m > 0, -3.0), lambda x, m: x.masked_fill(m > 0, -3.0))


def test_cast():
  helper_test_op([(4, 5)], lambda x: (x * 10).int().float(), lambda x: (x * 10).int().float(), forward_only=True)
  helper_test_op([(4, 5)], lambda x: x.double() * 2, lambda x: x.double() * 2)
  helper_test_op([(4, 5)], lambda x: x.half().float(), lambda x: x.half().float(), atol=1e-3, forward_only=True)
  helper_test_op(None, lambda x: x.bool(), lambda x: x.bool(), vals=[[0.0, 1.5, -2.0, 0.0]], forward_only=True)
  helper_test_op(None, lambda x: x.to(torch.uint8), lambda x: x.cast("uint8"), vals=[[0, 1, 200, 255]], forward_only=True)
