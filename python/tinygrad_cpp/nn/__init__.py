"""nn, as tinygrad's: layers are plain Python classes holding Tensors (so nn.state.get_parameters finds them
through __dict__) and calling the C++ Tensor ops. Initializations follow tinygrad's."""
from __future__ import annotations
import math
from tinygrad_cpp.tensor import Tensor
from tinygrad_cpp.dtype import dtypes
from tinygrad_cpp.nn import optim, state  # noqa: F401  (nn.optim, nn.state)


def _tuple(x, n: int) -> tuple[int, ...]:
  return tuple(x) if isinstance(x, (tuple, list)) else (x,) * n


class Linear:
  """y = x @ weight.T + bias; weight (out, in) and bias uniform in +-1/sqrt(in)."""
  def __init__(self, in_features: int, out_features: int, bias: bool = True):
    bound = 1 / math.sqrt(in_features)
    self.weight = Tensor.uniform(out_features, in_features, low=-bound, high=bound)
    self.bias = Tensor.uniform(out_features, low=-bound, high=bound) if bias else None
  def __call__(self, x: Tensor) -> Tensor: return x.linear(self.weight.transpose(), self.bias)


class Conv2d:
  """Convolution over len(kernel_size) spatial dims (an int kernel_size is square 2-D)."""
  def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1, groups: int = 1,
               bias: bool = True):
    self.kernel_size = _tuple(kernel_size, 2)
    if isinstance(padding, str): raise ValueError(f"Conv2d: padding={padding!r} is not supported, give ints")
    self.stride, self.dilation, self.groups, self.padding = stride, dilation, groups, padding
    bound = 1 / math.sqrt(in_channels // groups * math.prod(self.kernel_size))
    self.weight = Tensor.uniform(out_channels, in_channels // groups, *self.kernel_size, low=-bound, high=bound)
    self.bias = Tensor.uniform(out_channels, low=-bound, high=bound) if bias else None
  def __call__(self, x: Tensor) -> Tensor:
    return x.conv2d(self.weight, self.bias, self.groups, self.stride, self.dilation, self.padding)


def Conv1d(in_channels: int, out_channels: int, kernel_size: int, stride=1, padding=0, dilation=1, groups: int = 1,
           bias: bool = True) -> Conv2d:
  return Conv2d(in_channels, out_channels, (kernel_size,), stride, padding, dilation, groups, bias)


class ConvTranspose2d(Conv2d):
  """Transposed convolution; weight (in, out/groups, *kernel_size)."""
  def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
               dilation=1, groups: int = 1, bias: bool = True):
    super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias)
    bound = 1 / math.sqrt(in_channels // groups * math.prod(self.kernel_size))
    self.weight = Tensor.uniform(in_channels, out_channels // groups, *self.kernel_size, low=-bound, high=bound)
    self.output_padding = output_padding
  def __call__(self, x: Tensor) -> Tensor:
    return x.conv_transpose2d(self.weight, self.bias, self.groups, self.stride, self.dilation, self.padding,
                              self.output_padding)


class BatchNorm:
  """Batch normalization over axis 1 of (N, C, ...). Under Tensor.training it uses the batch's statistics and
  moves running_mean / running_var toward them (assigned: realized with the optimizer's step)."""
  def __init__(self, sz: int, eps: float = 1e-5, affine: bool = True, track_running_stats: bool = True,
               momentum: float = 0.1):
    self.eps, self.track_running_stats, self.momentum = eps, track_running_stats, momentum
    self.weight: Tensor | None = Tensor.ones(sz) if affine else None
    self.bias: Tensor | None = Tensor.zeros(sz) if affine else None
    self.num_batches_tracked = Tensor.zeros(1, dtype=dtypes.int64, requires_grad=False)
    if track_running_stats: self.running_mean, self.running_var = Tensor.zeros(sz, requires_grad=False), Tensor.ones(sz, requires_grad=False)

  def calc_stats(self, x: Tensor) -> tuple[Tensor, Tensor]:
    shape_mask = [1, -1, *([1] * (x.ndim - 2))]
    if self.track_running_stats and not Tensor.training: return self.running_mean, self.running_var
    reduce_axes = tuple(i for i in range(x.ndim) if i != 1)
    batch_mean = x.mean(axis=reduce_axes)
    y = x - batch_mean.detach().reshape(shape_mask)  # d(var)/d(mean) = 0: detached keeps backward small
    return batch_mean, (y * y).mean(axis=reduce_axes)

  def __call__(self, x: Tensor) -> Tensor:
    batch_mean, batch_var = self.calc_stats(x)
    if self.track_running_stats and Tensor.training:
      n = x.numel() / x.shape[1]
      self.running_mean.assign((1 - self.momentum) * self.running_mean + self.momentum * batch_mean.detach())
      self.running_var.assign((1 - self.momentum) * self.running_var + self.momentum * n / max(n - 1, 1) * batch_var.detach())
      self.num_batches_tracked.assign(self.num_batches_tracked + 1)
    return x.batchnorm(self.weight, self.bias, batch_mean, batch_var.add(self.eps).rsqrt())


BatchNorm2d = BatchNorm3d = BatchNorm


class LayerNorm:
  """Normalizes over the last len(normalized_shape) dims, then * weight + bias."""
  def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True):
    self.normalized_shape = _tuple(normalized_shape, 1)
    self.axis, self.eps = tuple(-1 - i for i in range(len(self.normalized_shape))), eps
    self.weight = Tensor.ones(*self.normalized_shape) if elementwise_affine else None
    self.bias = Tensor.zeros(*self.normalized_shape) if elementwise_affine else None

  def __call__(self, x: Tensor) -> Tensor:
    k = len(self.normalized_shape)
    if x.shape[-k:] != self.normalized_shape:
      raise ValueError(f"LayerNorm: last dims of input {x.shape} must be {self.normalized_shape}")
    # Tensor.layernorm normalizes one axis: fold the normalized dims into one.
    y = x.reshape(*x.shape[:-k], -1).layernorm(eps=self.eps).reshape(x.shape)
    return y if self.weight is None else y * self.weight + self.bias


class LayerNorm2d(LayerNorm):
  """LayerNorm over the channels of (N, C, H, W)."""
  def __call__(self, x: Tensor) -> Tensor: return super().__call__(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class RMSNorm:
  """x * rsqrt(mean(x^2, -1) + eps) * weight, computed in float32 or wider."""
  def __init__(self, dim: int, eps: float = 1e-6, elementwise_affine: bool = True):
    self.eps, self.weight = eps, Tensor.ones(dim) if elementwise_affine else None
  def __call__(self, x: Tensor) -> Tensor:
    xf = x.float() if x.dtype != dtypes.float64 else x
    y = (xf * (xf.square().mean(-1, keepdim=True) + self.eps).rsqrt()).cast(x.dtype)
    return y if self.weight is None else y * self.weight


class GroupNorm:
  """Normalizes each group of num_channels/num_groups channels of (N, C, ...), then a per-channel affine."""
  def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True):
    self.num_groups, self.num_channels, self.eps = num_groups, num_channels, eps
    self.weight = Tensor.ones(num_channels) if affine else None
    self.bias = Tensor.zeros(num_channels) if affine else None
  def __call__(self, x: Tensor) -> Tensor:
    y = x.reshape(x.shape[0], self.num_groups, -1).layernorm(eps=self.eps).reshape(x.shape)
    if self.weight is None or self.bias is None: return y
    cs = (1, -1, *([1] * (x.ndim - 2)))
    return y * self.weight.reshape(cs) + self.bias.reshape(cs)


class InstanceNorm(GroupNorm):
  """GroupNorm with one group per channel."""
  def __init__(self, num_features: int, eps: float = 1e-5, affine: bool = True):
    super().__init__(num_features, num_features, eps, affine)


class Embedding:
  """A lookup table: integer indices of any shape -> (*idx.shape, embed_size); weight glorot_uniform."""
  def __init__(self, vocab_size: int, embed_size: int):
    self.vocab_sz, self.embed_sz = vocab_size, embed_size
    self.weight = Tensor.glorot_uniform(vocab_size, embed_size)
  def __call__(self, idx: Tensor) -> Tensor:
    if not dtypes.is_int(idx.dtype): raise TypeError(f"Embedding: indices must be integers, got {idx.dtype}")
    if idx.numel() == 0: return Tensor.zeros(*idx.shape, self.embed_sz, dtype=self.weight.dtype, device=self.weight.device)
    # tinygrad's lookup without a gather: compare each index with arange(vocab) and sum the selected rows.
    hit = Tensor.arange(self.vocab_sz, device=idx.device) == idx.int().unsqueeze(-1)
    return hit.unsqueeze(-1).where(self.weight, 0).sum(-2)
