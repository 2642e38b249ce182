"""dtypes, as tinygrad's: dtypes.float32, dtypes.int, dtypes.is_float(dt), dtypes.default_float ..."""
from __future__ import annotations
from tinygrad_cpp import _C

DType = _C.DType


class dtypes:
  """The scalar dtypes by name and alias, and tinygrad's helper functions over them."""
  @staticmethod
  def is_float(x: DType) -> bool: return x.is_float()
  @staticmethod
  def is_int(x: DType) -> bool: return x.is_int()
  @staticmethod
  def is_unsigned(x: DType) -> bool: return x.is_unsigned()
  @staticmethod
  def is_bool(x: DType) -> bool: return x.is_bool()
  @staticmethod
  def from_py(x) -> DType:
    """The dtype tinygrad gives a Python value (a float, an int, a bool, or a nested list of them)."""
    if isinstance(x, (list, tuple)): return max((dtypes.from_py(v) for v in x), key=_PRIORITY.index, default=dtypes.default_float)
    if isinstance(x, bool): return dtypes.bool
    if isinstance(x, int): return dtypes.default_int
    return dtypes.default_float
  @staticmethod
  def as_const(val, dtype: DType):
    return bool(val) if dtype.is_bool() else int(val) if dtype.is_int() else float(val)
  @staticmethod
  def min(dtype: DType): return dtypes.as_const(dtype.min, dtype)
  @staticmethod
  def max(dtype: DType): return dtypes.as_const(dtype.max, dtype)
  @staticmethod
  def finfo(dtype: DType) -> tuple[int, int]:
    """(exponent bits, mantissa bits) of a float dtype."""
    return {2: (5, 10), 4: (8, 23), 8: (11, 52)}[dtype.itemsize] if dtype != dtypes.bfloat16 else (8, 7)


for _name, _dt in _C.scalar_dtypes().items(): setattr(dtypes, _name, _dt)
_ALIASES = {"half": "float16", "float": "float32", "double": "float64", "uchar": "uint8", "char": "int8",
            "short": "int16", "ushort": "uint16", "int": "int32", "uint": "uint32", "long": "int64", "ulong": "uint64"}
for _alias, _name in _ALIASES.items(): setattr(dtypes, _alias, getattr(dtypes, _name))
dtypes.default_float = _C.default_float()
dtypes.default_int = dtypes.int32
dtypes.floats = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)
dtypes.uints = (dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64)
dtypes.sints = (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64)
dtypes.ints = dtypes.uints + dtypes.sints
_PRIORITY = [dtypes.bool, *dtypes.ints, *dtypes.floats]


def to_dtype(x) -> DType:
  """A DType from a DType or a name ("float32", "int")."""
  return x if isinstance(x, DType) else _C.dtype_from_name(x)
