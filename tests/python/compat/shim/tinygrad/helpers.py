"""tinygrad.helpers: the names tinygrad's tests import, with real behaviour where it is cheap."""
from __future__ import annotations
import functools, math, operator, os, platform, sys
from tinygrad_cpp import Context, getenv  # noqa: F401
from tinygrad_cpp import _C


class ContextVar:
  """tinygrad's ContextVar: an int knob compared with ints. Knobs the core has (DEBUG, NOOPT, BEAM, ...) read the
  core's current value (so `with Context(DEBUG=2)` shows); the others read the environment."""
  def __init__(self, key: str, default: int = 0): self.key, self.default = key, default
  @property
  def value(self):
    try: return _C.context_value(self.key)
    except KeyError: return getenv(self.key, self.default)
  def __bool__(self): return bool(self.value)
  def __int__(self): return int(self.value)
  def __index__(self): return int(self.value)
  def __eq__(self, x): return self.value == x
  def __ne__(self, x): return self.value != x
  def __ge__(self, x): return self.value >= x
  def __gt__(self, x): return self.value > x
  def __le__(self, x): return self.value <= x
  def __lt__(self, x): return self.value < x
  def __hash__(self): return hash(self.key)
  def __repr__(self): return f"ContextVar({self.key}={self.value})"


DEBUG, IMAGE, BEAM, NOOPT, JIT = (ContextVar(k) for k in ("DEBUG", "IMAGE", "BEAM", "NOOPT", "JIT"))
CPU_LLVM, AMD_LLVM, EMULATE, WINO, TRANSCENDENTAL = (ContextVar(k) for k in ("CPU_LLVM", "AMD_LLVM", "EMULATE", "WINO",
                                                                            "TRANSCENDENTAL"))
SPLIT_REDUCEOP, FUSE_ARANGE, DEVECTORIZE = ContextVar("SPLIT_REDUCEOP", 1), ContextVar("FUSE_ARANGE"), ContextVar("DEVECTORIZE", 1)
CI = os.getenv("CI", "") != ""
OSX, WIN = platform.system() == "Darwin", sys.platform == "win32"


def prod(x, start=1): return functools.reduce(operator.mul, x, start)
def all_same(items): return all(x == items[0] for x in items)
def all_int(t): return all(isinstance(s, int) for s in t)
def dedup(x): return list(dict.fromkeys(x))
def flatten(l): return [item for sublist in l for item in sublist]
def argfix(*x):
  if x and isinstance(x[0], (tuple, list)):
    if len(x) != 1: raise ValueError(f"bad arg {x}")
    return tuple(x[0])
  return x
def make_tuple(x, cnt): return (x,) * cnt if isinstance(x, int) else tuple(x)
def round_up(num, amt): return (num + amt - 1) // amt * amt
def ceildiv(num, amt): return -(num // -amt)
def colored(st, color=None, background=False): return st
def temp(x: str) -> str:
  import tempfile
  return os.path.join(tempfile.gettempdir(), x)
def fetch(*args, **kwargs): raise NotImplementedError("tinygrad_cpp compat shim: no network fetch")
def polyN(x, p): return functools.reduce(lambda acc, c: acc * x + c, p, 0.0)
def mv_address(mv): raise NotImplementedError("tinygrad_cpp compat shim: mv_address")
def Timing(*args, **kwargs):
  import contextlib
  return contextlib.nullcontext()
