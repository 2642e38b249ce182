"""tinygrad.nn: tinygrad_cpp.nn."""
from tinygrad_cpp.nn import *  # noqa: F401,F403
from tinygrad_cpp.nn import optim, state  # noqa: F401
import tinygrad_cpp.nn as _nn
globals().update({k: v for k, v in vars(_nn).items() if not k.startswith("__")})
