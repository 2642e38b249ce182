"""nn.state, as tinygrad's: walk a model's __dict__ for its tensors; load and save weights files."""
from __future__ import annotations
from collections import OrderedDict
from tinygrad_cpp import _C
from tinygrad_cpp.tensor import Tensor


def get_state_dict(obj, prefix: str = "", tensor_type=Tensor) -> dict[str, Tensor]:
  """name -> tensor for every tensor reachable through attributes, lists, tuples and dicts ("l1.weight")."""
  if isinstance(obj, tensor_type): return {prefix.strip("."): obj}
  if hasattr(obj, "_asdict"): return get_state_dict(obj._asdict(), prefix, tensor_type)  # namedtuple
  if isinstance(obj, OrderedDict): return get_state_dict(dict(obj), prefix, tensor_type)
  if hasattr(obj, "__dict__"): return get_state_dict(obj.__dict__, prefix, tensor_type)
  state_dict: dict[str, Tensor] = {}
  if isinstance(obj, (list, tuple)):
    for i, x in enumerate(obj): state_dict.update(get_state_dict(x, f"{prefix}{i}.", tensor_type))
  elif isinstance(obj, dict):
    for k, v in obj.items(): state_dict.update(get_state_dict(v, f"{prefix}{k}.", tensor_type))
  return state_dict


def get_parameters(obj) -> list[Tensor]:
  """Every tensor of the model (weights and buffers such as BatchNorm's running statistics)."""
  return list(get_state_dict(obj).values())


def load_state_dict(model, state_dict: dict[str, Tensor], strict: bool = True, verbose: bool = False,
                    realize: bool = True) -> list[Tensor]:
  """Assigns state_dict[name] into each of the model's tensors (cast to its dtype, moved to its device) and
  realizes them. strict: a tensor of the model missing from state_dict raises."""
  del verbose, realize  # the C++ loader always realizes, in one schedule
  return _C.load_into(list(get_state_dict(model).items()), state_dict, strict)


def safe_load(fn: str, device: str | None = None) -> dict[str, Tensor]:
  """A .safetensors file as name -> tensor; lazy: the file is memory-mapped and copied on first use."""
  return _C.safe_load(str(fn), device)


def safe_save(tensors: dict[str, Tensor], fn: str, metadata: dict[str, str] | None = None) -> None:
  _C.safe_save(tensors, str(fn), metadata)


def torch_load(fn: str, device: str | None = None) -> dict[str, Tensor]:
  """A torch.save zip checkpoint (.pth, pytorch_model.bin), read without running its pickle."""
  return _C.torch_load(str(fn), device)
