"""tinygrad's helper_test_op: run the same function on torch and tinygrad_cpp tensors made from the same random
data, compare the forward results, then backpropagate the same loss through both and compare every input's
gradient."""
import numpy as np
import pytest
import torch
from tinygrad_cpp import Tensor


def _inputs(shps, vals, low, high, forward_only):
  np.random.seed(0)
  if shps is None:
    arrays = [np.array(v) for v in vals]
  else:
    arrays = [(np.random.random(size=s) * (high - low) + low).astype(np.float32) for s in shps]
  ts, tst = [], []
  for a in arrays:
    grad = not forward_only and a.dtype.kind == "f"
    ts.append(torch.tensor(a, requires_grad=grad))
    tst.append(Tensor(a, requires_grad=grad))
  return ts, tst


def compare(what, got, want, atol, rtol):
  want = np.asarray(want)
  assert got.shape == want.shape, f"{what}: shape {got.shape} != torch's {want.shape}"
  if want.dtype == np.bool_ or got.dtype == np.bool_:
    np.testing.assert_equal(got.astype(bool), want.astype(bool), err_msg=what)
  else:
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), atol=atol, rtol=rtol, err_msg=what)


def helper_test_op(shps, torch_fxn, tinygrad_fxn=None, atol=1e-6, rtol=1e-3, grad_atol=1e-4, grad_rtol=1e-3,
                   forward_only=False, vals=None, low=-2.0, high=2.0):
  """shps: input shapes (random floats in [low, high)), or vals: explicit input values."""
  if tinygrad_fxn is None: tinygrad_fxn = torch_fxn
  ts, tst = _inputs(shps, vals, low, high, forward_only)
  out = torch_fxn(*ts)
  # Not .realize(): in tinygrad.cpp a realized tensor's graph is cut, so backward would find no leaves
  # (tinygrad keeps it); numpy() realizes a copy and leaves the graph in place.
  ret = tinygrad_fxn(*tst)
  compare("forward pass", ret.numpy(), out.detach().numpy(), atol, rtol)
  if forward_only or not any(t.requires_grad for t in ts) or not out.dtype.is_floating_point: return
  (out + 1).square().mean().backward()
  (ret + 1).square().mean().backward()
  for i, (t, tt) in enumerate(zip(ts, tst)):
    if not t.requires_grad: continue
    want = t.grad if t.grad is not None else torch.zeros_like(t)
    got = tt.grad.numpy() if tt.grad is not None else np.zeros(tt.shape, np.float32)
    compare(f"backward pass tensor {i}", got, want.detach().numpy(), grad_atol, grad_rtol)


