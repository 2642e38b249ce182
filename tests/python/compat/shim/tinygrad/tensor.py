"""tinygrad.tensor: Tensor from tinygrad_cpp."""
from tinygrad_cpp import Tensor  # noqa: F401
from tinygrad.dtype import _to_np_dtype, _from_np_dtype  # noqa: F401
