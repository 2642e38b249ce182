"""tinygrad.device: Device, and is_dtype_supported answered by trying the dtype once on the device."""
from tinygrad_cpp import Device, Tensor  # noqa: F401

_supported: dict = {}


def is_dtype_supported(dtype, device=None) -> bool:
  device = Device.canonicalize(device)
  if device == "NULL": return True
  key = (repr(dtype), device)
  if key not in _supported:
    try:
      (Tensor.ones(2, dtype=dtype, device=device) + 1).realize()
      _supported[key] = True
    except Exception:
      _supported[key] = False
  return _supported[key]
