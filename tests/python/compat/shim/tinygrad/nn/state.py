from tinygrad_cpp.nn.state import *  # noqa: F401,F403
