"""Sharded tensors from Python (tinygrad's Tensor.shard): CPU devices, against the same program on one device."""
import numpy as np
import pytest
from tinygrad_cpp import Tensor, nn

DEVS = ("CPU", "CPU:1")


def test_shard_device_is_a_tuple_and_values_match():
  x = Tensor.randn(4, 6).realize()
  s = x.shard(DEVS, axis=0)
  assert s.device == DEVS and x.device == "CPU"
  np.testing.assert_allclose(s.numpy(), x.numpy())
  np.testing.assert_allclose((s * 2 + 1).sum(0).numpy(), (x.numpy() * 2 + 1).sum(0), rtol=1e-5)
  np.testing.assert_allclose(s.to("CPU:1").numpy(), x.numpy())
  r = x.to(DEVS)
  assert r.device == DEVS
  np.testing.assert_allclose((s @ Tensor.ones(6, 3, device=DEVS)).numpy(), x.numpy() @ np.ones((6, 3)), rtol=1e-5)


def test_data_parallel_linear_step_matches_one_device():
  np.random.seed(0)
  xs, ys = np.random.randn(8, 5).astype(np.float32), np.random.randn(8, 2).astype(np.float32)
  w0 = np.random.randn(5, 2).astype(np.float32)
  losses = []
  for devs in (None, DEVS):
    w = Tensor(w0, requires_grad=True)
    if devs: w.shard_(devs)
    opt = nn.optim.SGD([w], lr=0.1)
    x, y = Tensor(xs), Tensor(ys)
    if devs: x, y = x.shard(devs, axis=0), y.shard(devs, axis=0)
    with Tensor.train():
      for _ in range(3):
        opt.zero_grad()
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        opt.step()
    losses.append((loss.item(), w.numpy()))
  assert losses[0][0] == pytest.approx(losses[1][0], rel=1e-5)
  np.testing.assert_allclose(losses[0][1], losses[1][1], rtol=1e-5)


def test_uneven_shard_raises():
  with pytest.raises(Exception, match="equal parts"):
    Tensor.ones(5, 2).shard(DEVS, axis=0)
