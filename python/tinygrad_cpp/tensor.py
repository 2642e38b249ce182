"""Tensor: the C++ class from _C, with tinygrad's Python calling conventions added here.

The C++ binding takes plain typed arguments (a shape as one list, a list of tensors); this file adds the
forms a tinygrad program writes: Tensor.zeros(2, 3) and Tensor.zeros((2, 3)), x.reshape(2, -1),
x.cat(y, z, dim=1), in-place operators, iteration, numpy / DLPack interop and the training scope.
"""
from __future__ import annotations
import functools
import math
from tinygrad_cpp import _C
from tinygrad_cpp.dtype import dtypes

Tensor = _C.Tensor


def argfix(*x):
  """(2, 3) and ((2, 3),) both mean the shape (2, 3), as tinygrad's helpers.argfix."""
  if x and isinstance(x[0], (tuple, list)):
    if len(x) != 1: raise ValueError(f"bad arg {x}")
    return tuple(x[0])
  return x


def _method(fn):
  setattr(Tensor, fn.__name__, fn)
  return fn


def _static(fn):
  setattr(Tensor, fn.__name__, staticmethod(fn))
  return fn


# ---- creation: varargs shapes ----
def _shaped(name):
  impl = getattr(Tensor, "_" + name)
  def create(*shape, **kwargs): return impl(argfix(*shape), **kwargs)
  create.__name__ = name
  create.__doc__ = f"Tensor.{name}(*shape, dtype=None, device=None, requires_grad=None)"
  return _static(create)

for _n in ("empty", "zeros", "ones", "rand", "randn", "scaled_uniform", "glorot_uniform"): _shaped(_n)

@_static
def full(shape, fill_value, **kwargs): return Tensor._full(argfix(shape), fill_value, **kwargs)
@_static
def arange(start, stop=None, step=1, **kwargs):
  if stop is None: start, stop = 0, start
  return Tensor._arange(start, stop, step, **kwargs)
@_static
def eye(n: int, m: int | None = None, **kwargs):
  if n < 0 or (m is not None and m < 0): raise ValueError(f"eye: cannot have negative n={n}, m={m}")
  t = Tensor._eye(max(n, m if m is not None else n), **kwargs)
  return t if m is None or m == n else t.shrink(((0, n), (0, m)))
@_static
def randint(*shape, low=0, high=10, dtype=None, **kwargs):
  t = Tensor._randint(argfix(*shape), low, high, **kwargs)
  return t if dtype is None else t.cast(dtype)
@_static
def normal(*shape, mean=0.0, std=1.0, **kwargs): return Tensor._normal(argfix(*shape), mean, std, **kwargs)
@_static
def uniform(*shape, low=0.0, high=1.0, **kwargs): return Tensor._uniform(argfix(*shape), low, high, **kwargs)
@_static
def kaiming_uniform(*shape, a: float = 0.01, **kwargs): return Tensor._kaiming_uniform(argfix(*shape), a, **kwargs)
@_static
def kaiming_normal(*shape, a: float = 0.01, **kwargs): return Tensor._kaiming_normal(argfix(*shape), a, **kwargs)

def _like(self, kwargs):
  kwargs.setdefault("dtype", self.dtype)
  kwargs.setdefault("device", self.device)
  return kwargs
@_method
def zeros_like(self, **kwargs): return self.full_like(0, **kwargs)
@_method
def ones_like(self, **kwargs): return self.full_like(1, **kwargs)
@_method
def rand_like(self, **kwargs): return Tensor.rand(*self.shape, **_like(self, kwargs))
@_method
def randn_like(self, **kwargs): return Tensor.randn(*self.shape, **_like(self, kwargs))

# ---- movement: varargs ----
@_method
def reshape(self, shape, *args):
  # None keeps that dim, as in tinygrad.
  new = [self.shape[i] if s is None else s for i, s in enumerate(argfix(shape, *args))]
  concrete = all(isinstance(d, int) for d in [*new, *self.shape])  # symbolic sizes: checked by the C++ side
  if concrete and -1 not in new and math.prod(new) != self.numel():  # tinygrad: a size mismatch is ValueError
    raise _C.ShapeValueError(f"size mismatch, can't reshape {self.shape} ({self.numel()} elements) to {tuple(new)}")
  return self._reshape(new)
@_method
def view(self, shape, *args): return self.reshape(shape, *args)
@_method
def permute(self, order, *args): return self._permute(argfix(order, *args))
@_method
def expand(self, shape, *args): return self._expand(argfix(shape, *args))
@_method
def flip(self, axis, *args): return self._flip(argfix(axis, *args))
@_method
def repeat(self, repeats, *args):
  repeats = argfix(repeats, *args)
  if len(repeats) < self.ndim: raise _C.ShapeValueError(f"repeat: {len(repeats)} repeats for the {self.ndim} dims of {self.shape}")
  return self._repeat(repeats)
@_method
def cat(self, *args, dim: int = 0):
  ts = list(argfix(self, *args))
  if any(t.ndim == 0 for t in ts): raise IndexError("cat: zero-dimensional tensors cannot be concatenated (use stack)")
  return Tensor._cat(ts, dim)
@_method
def stack(self, *args, dim: int = 0): return Tensor._stack(list(argfix(self, *args)), dim)
@_static
def einsum(formula: str, *operands, **kwargs):
  ops = list(operands[0]) if len(operands) == 1 and isinstance(operands[0], (list, tuple)) else list(operands)
  out = Tensor._einsum(formula, ops)
  return out if kwargs.get("dtype") is None else out.cast(kwargs["dtype"])

# ---- tinygrad's Tensor.linear: x @ weight (weight (in, out)), unlike the C++ API's torch-style (out, in) ----
@_method
def linear(self, weight, bias=None):
  return self._linear_t(weight.transpose() if weight.ndim == 2 else weight, bias)

@_method
def sequential(self, ll): return functools.reduce(lambda x, f: f(x), ll, self)

# ---- autograd and realize with tinygrad's varargs: x.gradient(a, b), Tensor.realize(a, b, c) ----
_gradient = Tensor.gradient
@_method
def gradient(self, *targets, gradient=None):
  """The gradients of self (a scalar, or with gradient= given) with respect to each target, as a list."""
  ts = list(targets[0]) if len(targets) == 1 and isinstance(targets[0], (list, tuple)) else list(targets)
  return _gradient(self, ts, gradient)

_realize = Tensor.realize
@_method
def realize(self, *lst, do_update_stats: bool = True):
  """Runs the kernels for self (and for every tensor in lst, in one schedule); returns self."""
  if not lst: return _realize(self)
  Tensor.realize_all([self, *lst])
  return self

# ---- ops tinygrad has that compose from the core's (written as tinygrad writes them) ----
def _t(x, like):
  return x if isinstance(x, Tensor) else Tensor(x, device=like.device, dtype=like.dtype if not isinstance(x, float) or
                                                dtypes.is_float(like.dtype) else dtypes.default_float)

def _bshape(*shapes):
  import numpy as np
  return tuple(np.broadcast_shapes(*shapes))

for _n in ("sum", "prod"):
  def _make(impl, name):
    def reduce(self, axis=None, keepdim: bool = False, dtype=None):
      if isinstance(dtype, str): dtype = getattr(dtypes, dtype)  # AttributeError for an unknown name, as tinygrad
      if dtype is None: return impl(self, axis, keepdim)
      # a sum accumulates in the dtype asked for (tinygrad: cast, then reduce); prod casts first
      return self._sum_as(axis, keepdim, dtype) if name == "sum" else impl(self.cast(dtype), axis, keepdim)
    reduce.__name__, reduce.__doc__ = impl.__name__, impl.__doc__
    return reduce
  setattr(Tensor, _n, _make(getattr(Tensor, _n), _n))

@_method
def isfinite(self): return (self.isinf() | self.isnan()).logical_not()
@_method
def copysign(self, other):
  other = _t(other, self)
  return (other < 0).where(-self.abs(), self.abs()) + other * 0  # as tinygrad (other * 0: other's grad, broadcast)
@_method
def logaddexp(self, other):
  other = _t(other, self)
  shape = _bshape(self.shape, other.shape)
  return Tensor.stack(self.expand(shape), other.expand(shape)).logsumexp(0)
@_method
def isclose(self, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
  other = _t(other, self)
  finite_close = self.isfinite() & other.isfinite() & ((self - other).abs() <= atol + rtol * other.abs())
  inf_close = (self.isinf() | other.isinf()) & (self == other)
  close = finite_close | inf_close
  return close | (self.isnan() & other.isnan()) if equal_nan else close
@_method
def diag(self):
  if self.ndim != 1: raise ValueError(f"diag: expected a 1-D tensor, got shape {self.shape}")
  return Tensor.eye(self.shape[0], dtype=self.dtype, device=self.device) * self.reshape(1, -1)
@_method
def meshgrid(self, *args, indexing: str = "ij"):
  if indexing not in ("ij", "xy"): raise RuntimeError(f'indexing must be in ("ij", "xy"), got {indexing}')
  if len(tensors := (self, *args)) == 1: return tensors
  basis = tuple(range(len(tensors))) if indexing == "ij" else (1, 0) + tuple(range(2, len(tensors)))
  tensors = tuple(t.reshape((-1,) + (1,) * (len(args) - i)) for i, t in zip(basis, tensors))
  shape = _bshape(*(t.shape for t in tensors))
  return tuple(t.expand(shape) for t in tensors)
@_method
def argsort(self, dim: int = -1, descending: bool = False): return self.sort(dim, descending)[1]
@_method
def repeat_interleave(self, repeats: int, dim: int | None = None):
  x, dim = (self.flatten(), 0) if dim is None else (self, dim + self.ndim if dim < 0 else dim)
  shp = x.shape
  return x.reshape(*shp[:dim + 1], 1, *shp[dim + 1:]).expand(*shp[:dim + 1], repeats, *shp[dim + 1:]) \
          .reshape(*shp[:dim], shp[dim] * repeats, *shp[dim + 1:])
@_method
def std_mean(self, axis=None, keepdim: bool = False, correction=1):
  return self.std(axis, keepdim, correction), self.mean(axis, keepdim)
@_method
def var_mean(self, axis=None, keepdim: bool = False, correction=1):
  return self.var(axis, keepdim, correction), self.mean(axis, keepdim)
@_method
def nll_loss(self, Y, weight=None, ignore_index: int | None = None, reduction: str = "mean"):
  """Negative log likelihood of log-probabilities self (N, C, ...) at the class indices Y (N, ...)."""
  keep = Tensor.ones(*Y.shape, device=self.device, dtype=dtypes.bool) if ignore_index is None else Y != ignore_index
  Ys = keep.where(Y, 0)
  w = Tensor.ones(*Y.shape, device=self.device) if weight is None else weight[Ys]
  mw = keep.where(w, 0.0)
  nll = -self.gather(1, Ys.unsqueeze(1)).squeeze(1) * mw
  if reduction == "mean": return nll.sum() / mw.sum()
  if reduction == "sum": return nll.sum()
  if reduction == "none": return nll
  raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")

# ---- Python protocols ----
@_method
def __iter__(self):
  if self.ndim == 0: raise TypeError("iteration over a 0-d tensor")
  for i in range(self.shape[0]): yield self[i]

@_method
def __setitem__(self, indices, v):
  # Every element's flat index, viewed through the same indices, says where each value of v goes.
  where = Tensor.arange(self.numel(), device=self.device).reshape(self.shape)[indices]
  vals = (v if isinstance(v, Tensor) else Tensor(v, device=self.device, dtype=self.dtype)).cast(self.dtype)
  vals = vals.expand(where.shape) if vals.shape != where.shape else vals
  flat = self.reshape(-1).scatter(0, where.reshape(-1), vals.reshape(-1)) if where.numel() else self.reshape(-1)
  self.assign(flat.reshape(self.shape).contiguous())

def _inplace(name, op):
  def fn(self, x): return self.assign(op(self, x))
  fn.__name__ = name
  setattr(Tensor, name, fn)

for _n, _op in {"__iadd__": lambda a, b: a + b, "__isub__": lambda a, b: a - b, "__imul__": lambda a, b: a * b,
                "__itruediv__": lambda a, b: a / b, "__ipow__": lambda a, b: a ** b, "__imatmul__": lambda a, b: a @ b,
                "__iand__": lambda a, b: a & b, "__ior__": lambda a, b: a | b, "__ixor__": lambda a, b: a ^ b}.items():
  _inplace(_n, _op)

# numpy defers to these operators instead of broadcasting a Tensor as an object array.
Tensor.__array_ufunc__ = None

@_method
def __array__(self, dtype=None, copy=None):
  import numpy as np
  if copy is False:  # numpy 2's "share or fail": only host memory can be shared
    a = np.asarray(memoryview(self))
    if dtype is not None and a.dtype != np.dtype(dtype): raise ValueError("__array__: a dtype change needs a copy")
    return a
  a = self.numpy()
  return a if dtype is None else a.astype(dtype)

@_method
def data(self) -> memoryview:
  """The tensor's memory as a memoryview: shared (no copy) for host tensors, a copy from other devices."""
  try: return memoryview(self)
  except BufferError: return memoryview(self.numpy())

# ---- DLPack: the tensor's own memory (realized), on the host or a CUDA GPU, shared without a copy ----
@_method
def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
  # copy=True: a fresh buffer the consumer may own alone
  src = Tensor(self.numpy(), device=self.device, dtype=self.dtype) if copy else self
  kw = {k: v for k, v in (("max_version", max_version), ("dl_device", dl_device)) if v is not None}
  return src._memory().__dlpack__(**kw)  # _memory() waited for the GPU, so any consumer stream may read it

@_method
def __dlpack_device__(self):
  where = _C.memory_of_device(self.device)  # (each backend declares its memory's DLPack type)
  if where is None: raise BufferError(f"__dlpack_device__: memory of {self.device} cannot be shared")
  return where

def from_dlpack(x, device: str | None = None, dtype=None, requires_grad=None) -> Tensor:
  """A tensor over the memory of x without a copy (torch.from_dlpack's contract): any DLPack producer (torch, jax,
  cupy, numpy, on the host or a CUDA GPU) or buffer-protocol object. Writes through either side are seen by the
  other. device= or dtype= that differ from x's make a copy there."""
  dev = x.__dlpack_device__() if hasattr(x, "__dlpack_device__") else None
  if dev is not None and dev[0] == 2:  # CUDA: our kernels run on the legacy default stream (DLPack's stream 1),
    x = x.__dlpack__(stream=1)         # so the producer orders its queued work before that stream's next work
  try: t = Tensor._from_dlpack(x)
  except TypeError:  # read-only memory (or a type we have no dtype for, which Tensor() then names): a copy
    if not (hasattr(x, "__dlpack__") or hasattr(x, "__array__")): raise
    import numpy as np
    t = Tensor(np.from_dlpack(x) if not isinstance(x, np.ndarray) else x)
  if device is not None or dtype is not None:  # the copy is made now, not when first used
    t = t.to(device if device is not None else t.device).cast(dtype if dtype is not None else t.dtype).realize()
  if requires_grad is not None: t.requires_grad = requires_grad
  return t
Tensor.from_dlpack = staticmethod(from_dlpack)

# ---- training scope: `with Tensor.train():`, as tinygrad ----
class _TrainScope:
  def __init__(self, mode: bool = True): self.mode = mode
  def __enter__(self):
    self.prev, Tensor.training = Tensor.training, self.mode
    return self
  def __exit__(self, *exc): Tensor.training = self.prev
  def __call__(self, fn):
    @functools.wraps(fn)
    def wrapped(*a, **kw):
      with _TrainScope(self.mode): return fn(*a, **kw)
    return wrapped
Tensor.train = _TrainScope
Tensor.test = staticmethod(lambda: _TrainScope(False))

@_method
def size(self, dim: int | None = None):
  return self.shape if dim is None else self.shape[dim]

@_method
def is_floating_point(self) -> bool: return dtypes.is_float(self.dtype)

del _method, _static, _shaped, _n, _op, _make
