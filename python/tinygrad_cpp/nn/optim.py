"""nn.optim, as tinygrad's: the C++ optimizers. Each sets requires_grad on the float tensors it is given,
and step() (under Tensor.training) assigns the updates and realizes parameters and state in one schedule."""
from tinygrad_cpp._C import Optimizer, SGD, LARS, LAMB, Adam, AdamW

__all__ = ["Optimizer", "SGD", "LARS", "LAMB", "Adam", "AdamW"]
