"""nn layers, nn.state and nn.optim: layers against torch's with the same weights, parameter discovery through
__dict__, safetensors round trips, and optimizer steps against torch.optim."""
import numpy as np
import pytest
import torch
from tinygrad_cpp import Tensor, dtypes, nn
from tinygrad_cpp.nn.state import get_parameters, get_state_dict, load_state_dict, safe_load, safe_save


def _copy_from_torch(layer, tlayer):
  for name, p in tlayer.state_dict().items():
    if name in get_state_dict(layer): get_state_dict(layer)[name].assign(Tensor(p.detach().numpy()).cast(get_state_dict(layer)[name].dtype))


def _check_layer(layer, tlayer, x_shape, atol=1e-5, grad=True):
  _copy_from_torch(layer, tlayer)
  x = np.random.default_rng(0).standard_normal(x_shape).astype(np.float32)
  tx, gx = torch.tensor(x, requires_grad=grad), Tensor(x, requires_grad=grad)
  want, got = tlayer(tx), layer(gx)
  np.testing.assert_allclose(got.numpy(), want.detach().numpy(), atol=atol, rtol=1e-4)
  if grad:
    want.square().sum().backward()
    got.square().sum().backward()
    np.testing.assert_allclose(gx.grad.numpy(), tx.grad.numpy(), atol=1e-3, rtol=1e-3)


def test_readme_forms():
  t = Tensor([[1, 2, 3], [4, 5, 6]], dtype=dtypes.float32)
  assert nn.Linear(3, 4)(t).shape == (2, 4)
  opt = nn.optim.Adam(nn.state.get_parameters(nn.Linear(3, 4)), lr=1e-3)
  assert len(opt.params) == 2


def test_layers_match_torch():
  _check_layer(nn.Linear(5, 3), torch.nn.Linear(5, 3), (4, 5))
  _check_layer(nn.Linear(5, 3, bias=False), torch.nn.Linear(5, 3, bias=False), (2, 4, 5))
  _check_layer(nn.Conv2d(3, 4, 3, padding=1), torch.nn.Conv2d(3, 4, 3, padding=1), (2, 3, 6, 6), atol=1e-4)
  _check_layer(nn.Conv2d(4, 6, (3, 2), stride=2, groups=2), torch.nn.Conv2d(4, 6, (3, 2), stride=2, groups=2), (1, 4, 7, 7), atol=1e-4)
  _check_layer(nn.Conv1d(3, 2, 3), torch.nn.Conv1d(3, 2, 3), (2, 3, 8), atol=1e-4)
  _check_layer(nn.ConvTranspose2d(3, 2, 3, stride=2), torch.nn.ConvTranspose2d(3, 2, 3, stride=2), (1, 3, 4, 4), atol=1e-4)
  _check_layer(nn.LayerNorm(5), torch.nn.LayerNorm(5), (3, 5), atol=1e-4)
  _check_layer(nn.LayerNorm((4, 5)), torch.nn.LayerNorm((4, 5)), (3, 4, 5), atol=1e-4)
  _check_layer(nn.GroupNorm(2, 4), torch.nn.GroupNorm(2, 4), (3, 4, 5), atol=1e-4)
  _check_layer(nn.InstanceNorm(4), torch.nn.InstanceNorm1d(4, affine=True), (3, 4, 5), atol=1e-4)


def test_rmsnorm_embedding():
  x = np.random.default_rng(1).standard_normal((2, 3, 8)).astype(np.float32)
  want = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6)
  np.testing.assert_allclose(nn.RMSNorm(8)(Tensor(x)).numpy(), want, atol=1e-5)
  emb = nn.Embedding(10, 4)
  idx = np.array([[1, 9], [0, 1]], np.int32)
  np.testing.assert_allclose(emb(Tensor(idx)).numpy(), emb.weight.numpy()[idx])
  assert emb(Tensor.zeros(0, dtype=dtypes.int32)).shape == (0, 4)
  with pytest.raises(TypeError): emb(Tensor([1.0]))


def test_batchnorm_train_and_eval():
  bn, tbn = nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)
  x = np.random.default_rng(2).standard_normal((4, 3, 2, 2)).astype(np.float32) * 2 + 1
  with Tensor.train():
    np.testing.assert_allclose(bn(Tensor(x)).numpy(), tbn(torch.tensor(x)).detach().numpy(), atol=1e-5)
  np.testing.assert_allclose(bn.running_mean.numpy(), tbn.running_mean.numpy(), atol=1e-5)
  np.testing.assert_allclose(bn.running_var.numpy(), tbn.running_var.numpy(), atol=1e-5)
  assert bn.num_batches_tracked.item() == 1
  tbn.eval()
  np.testing.assert_allclose(bn(Tensor(x)).numpy(), tbn(torch.tensor(x)).detach().numpy(), atol=1e-5)


class Net:
  def __init__(self):
    self.l1, self.bn = nn.Linear(4, 8), nn.BatchNorm(8)
    self.layers = [nn.Linear(8, 8), nn.Linear(8, 2)]
    self.extra = {"scale": Tensor.ones(2)}
  def __call__(self, x):
    x = self.bn(self.l1(x)).relu()
    for l in self.layers: x = l(x)
    return x * self.extra["scale"]


def test_state_dict_walks_dict():
  net = Net()
  names = list(get_state_dict(net))
  assert names == ["l1.weight", "l1.bias", "bn.weight", "bn.bias", "bn.num_batches_tracked", "bn.running_mean",
                   "bn.running_var", "layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias", "extra.scale"]
  assert len(get_parameters(net)) == len(names)


def test_safetensors_roundtrip_and_load_state_dict(tmp_path):
  net, other = Net(), Net()
  fn = str(tmp_path / "net.safetensors")
  safe_save(get_state_dict(net), fn, metadata={"who": "test"})
  loaded = safe_load(fn)
  assert set(loaded) == set(get_state_dict(net))
  assert loaded["bn.num_batches_tracked"].dtype == dtypes.int64
  load_state_dict(other, loaded)
  for k, v in get_state_dict(net).items(): np.testing.assert_equal(get_state_dict(other)[k].numpy(), v.numpy())
  x = Tensor.randn(3, 4)
  np.testing.assert_allclose(other(x).numpy(), net(x).numpy(), atol=1e-6)
  with pytest.raises(RuntimeError): load_state_dict(other, {k: v for k, v in loaded.items() if k != "l1.bias"})
  load_state_dict(other, {"l1.bias": Tensor.zeros(8)}, strict=False)
  assert other.l1.bias.tolist() == [0.0] * 8
  with pytest.raises(RuntimeError, match="shape"): load_state_dict(other, {"l1.bias": Tensor.zeros(3)}, strict=False)
  with pytest.raises(RuntimeError): safe_load(str(tmp_path / "missing.safetensors"))
  (tmp_path / "bad.safetensors").write_bytes(b"\xff" * 16)
  with pytest.raises(RuntimeError): safe_load(str(tmp_path / "bad.safetensors"))


@pytest.mark.parametrize("name,kw", [("SGD", {"lr": 0.1}), ("SGD", {"lr": 0.1, "momentum": 0.9}),
                                     ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
                                     ("Adam", {"lr": 0.01}), ("AdamW", {"lr": 0.01, "weight_decay": 0.1})], ids=str)
def test_optimizer_steps_match_torch(name, kw):
  w0 = np.random.default_rng(3).standard_normal((4, 3)).astype(np.float32)
  x = np.random.default_rng(4).standard_normal((5, 4)).astype(np.float32)
  tw = torch.tensor(w0, requires_grad=True)
  tkw = {"betas": (0.9, 0.999), **kw} if name.startswith("Adam") else kw
  topt = getattr(torch.optim, name)([tw], **tkw)
  w = Tensor(w0.copy()).contiguous().realize()
  opt = getattr(nn.optim, name)([w], **kw)
  with Tensor.train():
    for _ in range(3):
      topt.zero_grad(); (torch.tensor(x) @ tw).tanh().square().mean().backward(); topt.step()
      opt.zero_grad(); (Tensor(x) @ w).tanh().square().mean().backward(); opt.step()
  np.testing.assert_allclose(w.numpy(), tw.detach().numpy(), atol=1e-5, rtol=1e-4)


def test_training_loop_reduces_loss():
  Tensor.manual_seed(0)
  net = Net()
  opt = nn.optim.Adam(get_parameters(net), lr=0.03)
  X = Tensor.randn(32, 4)
  Y = (X[:, 0] > 0).int()
  losses = []
  with Tensor.train():
    for _ in range(30):
      opt.zero_grad()
      loss = net(X).sparse_categorical_crossentropy(Y)
      loss.backward()
      opt.step([loss])
      losses.append(loss.item())
  assert losses[-1] < losses[0] * 0.5
  with pytest.raises(RuntimeError): opt.step()  # outside Tensor.train()
