"""tinygrad_cpp: tinygrad's Python API over the tinygrad.cpp core (lazy tensors, fused kernels, generated C).

  from tinygrad_cpp import Tensor, dtypes, Device, Context, nn
  (Tensor([[1, 2, 3]]) + 2).sum(axis=1).numpy()

It is a separate package from tinygrad: both can be installed and imported side by side.
"""
from tinygrad_cpp import _C
from tinygrad_cpp.dtype import dtypes, DType
from tinygrad_cpp.tensor import Tensor, from_dlpack
from tinygrad_cpp.device import Device, Context, GlobalCounters, getenv
from tinygrad_cpp.jit import TinyJit, JitError

Variable = _C.Variable
from tinygrad_cpp import nn

__all__ = ["Tensor", "dtypes", "DType", "Device", "Context", "GlobalCounters", "getenv", "nn", "from_dlpack", "TinyJit",
           "JitError", "Variable"]
__version__ = "0.1.0"
