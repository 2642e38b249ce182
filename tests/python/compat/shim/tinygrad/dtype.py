"""tinygrad.dtype: dtypes and DType from tinygrad_cpp, plus the small helpers tests import."""
from tinygrad_cpp.dtype import dtypes, DType, to_dtype  # noqa: F401
from typing import Union

ConstType = Union[float, int, bool]
ImageDType = DType
least_upper_dtype = None


def _to_np_dtype(dtype):
  import numpy as np
  for name in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
               "float64"):
    if dtype == getattr(dtypes, name): return np.dtype(name).type
  return None


def _from_np_dtype(npdtype):
  import numpy as np
  return getattr(dtypes, np.dtype(npdtype).name)


def least_upper_float(dt): return dt if dtypes.is_float(dt) else dtypes.default_float
