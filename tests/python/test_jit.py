"""TinyJit from Python: tinygrad's decorator (tensors anywhere in the arguments, tensor or container results),
replays equal to eager runs, a jitted training step, and misuse raising JitError (an AssertionError, as
tinygrad's asserts)."""
import numpy as np
import pytest
from tinygrad_cpp import Tensor, TinyJit, JitError, Context, nn


def test_replays_equal_eager():
  w = Tensor.randn(8, 4).realize()

  @TinyJit
  def f(x, scale, extra=None):
    y = (x @ w).relu() * scale
    return y, {"sum": y.sum() + extra[0]}

  for i in range(5):
    x, e = Tensor.randn(3, 8).realize(), Tensor.randn(1).realize()
    y, d = f(x, 2.0, extra=[e])
    want = np.maximum(x.numpy() @ w.numpy(), 0) * 2.0
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(d["sum"].item(), want.sum() + e.item(), rtol=1e-5)
  assert f.captured and f.cnt == 5 and f.kernel_count >= 2


def test_training_step_matches_eager():
  def run(jitted):
    Tensor.manual_seed(3)
    l1, l2 = nn.Linear(6, 12), nn.Linear(12, 3)
    opt = nn.optim.SGD(nn.state.get_parameters([l1, l2]), lr=0.1)
    x, y = Tensor.randn(5, 6).realize(), Tensor([0, 1, 2, 1, 0]).realize()

    def step(x, y):
      with Tensor.train():
        opt.zero_grad()
        loss = l2(l1(x).relu()).sparse_categorical_crossentropy(y)
        loss.backward()
        opt.step()
        return loss

    fn = TinyJit(step) if jitted else step
    return [fn(x, y).item() for _ in range(6)]

  eager, jitted = run(False), run(True)
  assert jitted == eager and eager[-1] < eager[0]


def test_misuse_raises_jit_error():
  @TinyJit
  def f(a): return a * 2 + 1

  f(Tensor.ones(3, 4))
  f(Tensor.ones(3, 4))
  with pytest.raises(JitError, match="input 0 has shape"): f(Tensor.ones(4, 3))
  with pytest.raises(AssertionError): f(Tensor.ones(3, 4), Tensor.ones(1))

  @TinyJit
  def same(a): return a

  same(Tensor.ones(2))
  with pytest.raises(JitError, match="ran no kernel"): same(Tensor.ones(2))


def test_jit_off_runs_the_function():
  runs = []

  @TinyJit
  def f(a):
    runs.append(1)
    return a + 1

  with Context(JIT=0):
    for _ in range(3): assert f(Tensor([1.0])).item() == 2.0
  assert len(runs) == 3


def test_variables_replay_with_each_value():
  from tinygrad_cpp import Variable
  pos = Variable("pos", 0, 10)
  w = Tensor.rand(10).realize()

  @TinyJit
  def f(x, start_pos):
    return ((Tensor.arange(10) < start_pos).where(x, 0) + w * Tensor(start_pos)).sum()

  for k in [3, 5, 0, 10, 7]:
    x = Tensor.rand(10).realize()
    got = f(x, start_pos=pos.bind(k)).item()
    xs, ws = x.numpy(), w.numpy()
    np.testing.assert_allclose(got, xs[:k].sum() + (ws * k).sum(), rtol=1e-5)
  assert f.captured
  assert pos.bind(4).unbind() == (pos, 4) and int(pos.bind(4)) == 4 and pos.expr == "pos"
  with pytest.raises(RuntimeError, match="outside its range"): pos.bind(11)
  with pytest.raises(JitError, match="called with 1 inputs"): f(Tensor.rand(10).realize(), start_pos=3)


def test_random_draws_follow_the_eager_stream():
  def draws(jit_level):
    with Context(JIT=jit_level):
      Tensor.manual_seed(7)
      f = TinyJit(lambda x: x + Tensor.rand(4))
      return [f(Tensor.ones(4).realize()).numpy().copy() for _ in range(4)]
  for a, b in zip(draws(0), draws(1)): np.testing.assert_array_equal(a, b)


def test_symbolic_shapes_decode_step():
  # A KV cache written at start_pos and read up to start_pos + 1, as tinygrad's llama: shapes hold the variable.
  from tinygrad_cpp import Variable
  var = Variable("start_pos", 0, 15)
  cache = Tensor.zeros(16, 4).contiguous().realize()
  q = Tensor.rand(1, 4).realize()

  @TinyJit
  def step(x, start_pos):
    cache.shrink(((start_pos, start_pos + 1), None)).assign(x).realize()
    keys = cache.shrink(((0, start_pos + 1), None))
    assert repr(keys.shape[0]) == "(start_pos+1)" and keys.shape[1] == 4
    return (q @ keys.T).softmax(-1).contiguous()

  rows = []
  for p in range(6):
    x = Tensor.rand(1, 4).realize()
    rows.append(x.numpy()[0])
    out = step(x, start_pos=var.bind(p))
    assert out.shape[1].val == p + 1  # the call's value, also on a replay
    got = out.reshape(1, p + 1).numpy()
    s = q.numpy() @ np.array(rows).T
    want = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
    np.testing.assert_allclose(got, want, rtol=1e-5)
  assert step.captured
  with pytest.raises(RuntimeError, match="whole ranges"): cache.shrink(((0, var.bind(3) + 2), None))
