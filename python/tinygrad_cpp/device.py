"""Device and Context, as tinygrad's: Device.DEFAULT, `with Context(DEBUG=2): ...`."""
from __future__ import annotations
import os
from tinygrad_cpp import _C

Context = _C.Context
GlobalCounters = _C.GlobalCounters


class _DeviceMeta(type):
  # Device.DEFAULT reads DEV like the C++ core does; assigning it sets DEV, so later tensors use it.
  @property
  def DEFAULT(cls) -> str: return _C.default_device()
  @DEFAULT.setter
  def DEFAULT(cls, value: str): os.environ["DEV"] = _C.canonicalize(value)


class Device(metaclass=_DeviceMeta):
  """The devices tensors run on: CPU (generated C), INTERP (UOp interpreter), NULL (runs nothing)."""
  @staticmethod
  def canonicalize(device: str | None) -> str: return _C.default_device() if device is None else _C.canonicalize(device)


def getenv(key: str, default=0):
  """An environment variable, converted to the type of default (tinygrad's helpers.getenv)."""
  return type(default)(os.getenv(key, default))
