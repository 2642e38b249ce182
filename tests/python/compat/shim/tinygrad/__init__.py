"""A `tinygrad` import shim over tinygrad_cpp, for running upstream tinygrad's test files against it
(scripts/tinygrad-compat.sh puts this directory first on PYTHONPATH for that run only; never install it).
It re-exports tinygrad_cpp's names under tinygrad's module paths and stubs only what test files import."""
from tinygrad_cpp import Tensor, dtypes, Device, Context, GlobalCounters, nn  # noqa: F401
from tinygrad.helpers import getenv  # noqa: F401
from tinygrad.dtype import DType  # noqa: F401


def TinyJit(fn=None, **kwargs):
  """No JIT here: the function runs as written each call."""
  if fn is None: return lambda f: f
  return fn


class Variable:  # symbolic shapes are not supported; importing the name is
  def __init__(self, *args, **kwargs): raise NotImplementedError("tinygrad_cpp: symbolic Variable is not supported")
