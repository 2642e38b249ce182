"""TinyJit, as tinygrad's: @TinyJit on a function of tensors. The first call runs it, the second records the
kernels it launches, later calls replay them on the new tensors' memory (C++: include/tg/jit.h).

Tensors may be anywhere in the arguments (positional, keyword, inside lists, tuples and dicts); so may bound
Variables (Variable("start_pos", 1, 1024).bind(n)): each replay runs the kernels with the new value. Other
arguments are frozen at capture, as in tinygrad. The result may be a tensor or a list/tuple/dict of them; a replay
returns tensors over the capture's output buffers. Misuse (a changed shape, dtype or device of an input, a
function that returns an input or runs no kernel) raises JitError.
"""
from __future__ import annotations
import functools
from tinygrad_cpp import _C

Tensor = _C.Tensor


class JitError(AssertionError, RuntimeError):
  """A TinyJit misuse (tinygrad asserts on these: an AssertionError, and a RuntimeError as all core errors)."""


class _Slot:
  __slots__ = ("i",)
  def __init__(self, i): self.i = i


class _VarSlot(_Slot):
  """A bound variable: the C++ side sees it as a tensor of its value, the function gets the variable back."""
  __slots__ = ("bound",)
  def __init__(self, i, bound): self.i, self.bound = i, bound


def _flatten(x, out):
  """x with each Tensor replaced by a _Slot into `out` (tensors appended in order of appearance)."""
  if isinstance(x, Tensor):
    out.append(x)
    return _Slot(len(out) - 1)
  if isinstance(x, _C.BoundVariable):
    out.append(Tensor(x))
    return _VarSlot(len(out) - 1, x)
  if isinstance(x, (list, tuple)): return type(x)(_flatten(v, out) for v in x)
  if isinstance(x, dict): return {k: _flatten(v, out) for k, v in x.items()}
  return x


def _fill(x, tensors):
  if isinstance(x, _VarSlot): return x.bound
  if isinstance(x, _Slot): return tensors[x.i]
  if isinstance(x, (list, tuple)): return type(x)(_fill(v, tensors) for v in x)
  if isinstance(x, dict): return {k: _fill(v, tensors) for k, v in x.items()}
  return x


class _Call:
  """What the C++ side calls back: the function, with the current call's arguments. (Kept apart from TinyJit,
  so the C++ object holds no reference back to its owner: a cycle through C++ is invisible to Python's GC.)"""
  __slots__ = ("fxn", "args", "ret")

  def __init__(self, fxn): self.fxn, self.args, self.ret = fxn, None, None

  def __call__(self, tensors):
    args, kwargs = _fill(self.args, tensors)
    flat = []
    self.ret = _flatten(self.fxn(*args, **kwargs), flat)
    return flat


class TinyJit:
  def __init__(self, fxn):
    self.fxn = fxn
    self._call = _Call(fxn)
    self._jit = _C._TinyJit(self._call)
    functools.update_wrapper(self, fxn)

  def __call__(self, *args, **kwargs):
    flat = []
    self._call.args = _flatten((args, kwargs), flat)
    try:
      out = self._jit(flat)
    except RuntimeError as e:
      if str(e).startswith("TinyJit:"): raise JitError(str(e)) from None
      raise
    finally:
      self._call.args = None  # the inputs are not kept alive between calls
    return _fill(self._call.ret, out)

  def __get__(self, obj, objtype=None):  # a jitted method: bind self
    return self if obj is None else functools.partial(self.__call__, obj)

  def reset(self): self._jit.reset()
  @property
  def cnt(self): return self._jit.calls
  @property
  def captured(self): return self._jit.captured
  @property
  def kernel_count(self): return self._jit.kernel_count
