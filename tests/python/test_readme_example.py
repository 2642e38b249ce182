"""tinygrad's README training example (tinygrad 0.12.0's README.md, "Quick example comparing to PyTorch" ->
the LinearNet), run as written except for the import line: `from tinygrad import` -> `from tinygrad_cpp import`."""
import contextlib
import io
import re

README_EXAMPLE = '''\
from tinygrad import Tensor, nn

class LinearNet:
  def __init__(self):
    self.l1 = Tensor.kaiming_uniform(784, 128)
    self.l2 = Tensor.kaiming_uniform(128, 10)
  def __call__(self, x:Tensor) -> Tensor:
    return x.flatten(1).dot(self.l1).relu().dot(self.l2)

model = LinearNet()
optim = nn.optim.Adam([model.l1, model.l2], lr=0.001)

x, y = Tensor.rand(4, 1, 28, 28), Tensor([2,4,3,7])  # replace with real mnist dataloader

with Tensor.train():
  for i in range(10):
    optim.zero_grad()
    loss = model(x).sparse_categorical_crossentropy(y).backward()
    optim.step()
    print(i, loss.item())
'''


def test_readme_example_trains():
  src = README_EXAMPLE.replace("from tinygrad import Tensor, nn", "from tinygrad_cpp import Tensor, nn", 1)
  assert src.count("tinygrad_cpp") == 1  # the only change
  out = io.StringIO()
  with contextlib.redirect_stdout(out):
    exec(compile(src, "tinygrad_readme_example.py", "exec"), {"__name__": "__main__"})
  losses = [float(m.group(2)) for m in re.finditer(r"^(\d+) (\S+)$", out.getvalue(), re.M)]
  assert len(losses) == 10, out.getvalue()
  assert all(l == l and l >= 0 for l in losses), losses  # finite, non-negative
  assert min(losses[5:]) < losses[0] / 4, losses      # it learns the 4 random samples
