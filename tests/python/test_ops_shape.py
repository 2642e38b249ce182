"""Reductions, movement, indexing and joining ops against PyTorch: axes None / int / negative / tuple, keepdim,
0- and 1-sized dims."""
import numpy as np
import pytest
import torch
from op_helpers import helper_test_op
from tinygrad_cpp import Tensor

AXES = [None, 0, 1, -1, (0, 1), (-1, 0)]


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("op", ["sum", "max", "min", "mean"])
def test_reduce(op, axis, keepdim):
  def tf(x):
    if axis is None:
      r = getattr(x, op)()
      return r.reshape(1, 1, 1) if keepdim else r
    if op in ("max", "min"): return getattr(torch, "amax" if op == "max" else "amin")(x, dim=axis, keepdim=keepdim)
    return getattr(x, op)(dim=axis, keepdim=keepdim)
  helper_test_op([(4, 5, 6)], tf, lambda x: getattr(x, op)(axis=axis, keepdim=keepdim), atol=1e-5)


@pytest.mark.parametrize("shape", [(3, 1, 4), (1,), (1, 1)], ids=str)
def test_reduce_size_one(shape):
  helper_test_op([shape], lambda x: x.sum(dim=-1), lambda x: x.sum(axis=-1))
  helper_test_op([shape], lambda x: x.amax(dim=0), lambda x: x.max(axis=0))
  helper_test_op([shape], lambda x: x.mean(), lambda x: x.mean())


def test_reduce_empty():
  helper_test_op([(0, 3)], lambda x: x.sum(dim=0), lambda x: x.sum(axis=0), forward_only=True)
  helper_test_op([(3, 0)], lambda x: x.sum(dim=1, keepdim=True), lambda x: x.sum(axis=1, keepdim=True), forward_only=True)
  helper_test_op([(2, 0, 3)], lambda x: x.sum(dim=(0, 2)), lambda x: x.sum(axis=(0, 2)), forward_only=True)


def test_int_and_bool_reduce():
  helper_test_op(None, lambda x: x.sum(dim=0), lambda x: x.sum(axis=0), vals=[[[1, 2], [3, 4], [5, -6]]], forward_only=True)
  helper_test_op(None, lambda x: x.amax(dim=1), lambda x: x.max(axis=1), vals=[[[1, 7], [3, 4]]], forward_only=True)
  helper_test_op(None, lambda x: x.any(), lambda x: x.any(), vals=[[False, True, False]], forward_only=True)
  helper_test_op(None, lambda x: x.all(dim=1), lambda x: x.all(axis=1), vals=[[[True, False], [True, True]]], forward_only=True)


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)], ids=str)
def test_prod_var_std(axis):
  kw = {} if axis is None else {"dim": axis}
  helper_test_op([(3, 4, 5)], lambda x: x.var(**kw), lambda x: x.var(axis=axis), atol=1e-5)
  helper_test_op([(3, 4, 5)], lambda x: x.std(**kw, keepdim=True) if axis is not None else x.std(),
                 lambda x: x.std(axis=axis, keepdim=axis is not None), atol=1e-5)
  helper_test_op([(3, 4, 5)], lambda x: x.var(**kw, correction=0) if axis is not None else x.flatten().var(0, correction=0),
                 lambda x: x.var(axis=axis, correction=0), atol=1e-5)
  if axis is None or isinstance(axis, int):
    helper_test_op([(3, 4, 5)], lambda x: x.prod(**kw), lambda x: x.prod(axis=axis), low=0.5, high=1.5, atol=1e-5)


@pytest.mark.parametrize("axis", [0, 1, -1], ids=str)
def test_softmax_logsumexp_cumsum(axis):
  helper_test_op([(4, 7)], lambda x: x.softmax(dim=axis), lambda x: x.softmax(axis), atol=1e-6)
  helper_test_op([(4, 7)], lambda x: x.log_softmax(dim=axis), lambda x: x.log_softmax(axis), atol=1e-5)
  helper_test_op([(4, 7)], lambda x: x.logsumexp(dim=axis), lambda x: x.logsumexp(axis), atol=1e-5)
  helper_test_op([(4, 7)], lambda x: x.logsumexp(dim=axis, keepdim=True), lambda x: x.logsumexp(axis, keepdim=True), atol=1e-5)
  helper_test_op([(4, 7)], lambda x: x.cumsum(dim=axis), lambda x: x.cumsum(axis), atol=1e-5)
  helper_test_op([(1, 1)], lambda x: x.softmax(dim=axis), lambda x: x.softmax(axis))


def test_logsumexp_all_and_tuple():
  helper_test_op([(3, 4, 5)], lambda x: x.flatten().logsumexp(0), lambda x: x.logsumexp(), atol=1e-5)
  helper_test_op([(3, 4, 5)], lambda x: x.logsumexp(dim=(0, 2)), lambda x: x.logsumexp(axis=(0, 2)), atol=1e-5)


@pytest.mark.parametrize("axis", [None, 0, 1, -1], ids=str)
def test_argmax_argmin(axis):
  vals = [np.random.default_rng(0).permutation(20).reshape(4, 5).astype(np.float32)]
  helper_test_op(None, lambda x: x.argmax(dim=axis).int(), lambda x: x.argmax(axis=axis), vals=vals, forward_only=True)
  helper_test_op(None, lambda x: x.argmin(dim=axis).int(), lambda x: x.argmin(axis=axis), vals=vals, forward_only=True)
  if axis is not None:
    helper_test_op(None, lambda x: x.argmax(dim=axis, keepdim=True).int(), lambda x: x.argmax(axis=axis, keepdim=True),
                   vals=vals, forward_only=True)


def test_sort_topk():
  vals = [np.random.default_rng(1).permutation(24).reshape(4, 6).astype(np.float32)]
  helper_test_op(None, lambda x: x.sort(dim=-1).values, lambda x: x.sort(dim=-1)[0], vals=vals)
  helper_test_op(None, lambda x: x.sort(dim=0, descending=True).values, lambda x: x.sort(dim=0, descending=True)[0], vals=vals)
  helper_test_op(None, lambda x: x.sort(dim=-1).indices.int(), lambda x: x.sort(dim=-1)[1], vals=vals, forward_only=True)
  helper_test_op(None, lambda x: x.topk(3).values, lambda x: x.topk(3)[0], vals=vals)
  helper_test_op(None, lambda x: x.topk(2, dim=0, largest=False).values, lambda x: x.topk(2, dim=0, largest=False)[0], vals=vals)


# ---- movement ----
def test_reshape():
  helper_test_op([(4, 3, 6, 6)], lambda x: x.reshape(-1, 3, 6, 6))
  helper_test_op([(4, 3, 6, 6)], lambda x: x.reshape((12, 36)), lambda x: x.reshape((12, 36)))
  helper_test_op([(4, 3, 6, 6)], lambda x: x.reshape(-1, 1, 6, 6), lambda x: x.reshape(-1, 1, 6, 6))
  helper_test_op([()], lambda x: x.reshape(1, 1), lambda x: x.reshape(1, 1))
  helper_test_op([(1,)], lambda x: x.reshape(()), lambda x: x.reshape(()))
  helper_test_op([(0, 4)], lambda x: x.reshape(2, 0, 2), lambda x: x.reshape(2, 0, 2))
  helper_test_op([(3, 4)], lambda x: x.reshape(3, 4), lambda x: x.reshape(None, 4))


def test_permute_transpose_flatten():
  helper_test_op([(1, 2, 3, 4)], lambda x: x.permute(3, 0, 2, 1))
  helper_test_op([(3, 4, 5, 6)], lambda x: x.permute((3, 2, 1, 0)), lambda x: x.permute((3, 2, 1, 0)))
  helper_test_op([(3, 4, 5)], lambda x: x.permute(-1, 0, -2), lambda x: x.permute(-1, 0, -2))
  helper_test_op([(3, 4)], lambda x: x.T, lambda x: x.T)
  helper_test_op([(3, 4, 5)], lambda x: x.transpose(0, 2), lambda x: x.transpose(0, 2))
  helper_test_op([(3, 4, 5)], lambda x: x.transpose(-1, -2), lambda x: x.transpose(-1, -2))
  helper_test_op([(3, 4, 5)], lambda x: x.transpose(1, 0), lambda x: x.transpose())
  for s, e in [(0, -1), (1, -1), (0, 1), (-2, -1)]:
    helper_test_op([(3, 4, 5)], lambda x: x.flatten(s, e), lambda x: x.flatten(s, e))
  helper_test_op([(3, 20)], lambda x: x.unflatten(1, (4, 5)), lambda x: x.unflatten(1, (4, 5)))


def test_expand_squeeze_unsqueeze_repeat():
  helper_test_op([(4, 1)], lambda x: x.expand(4, 5), lambda x: x.expand(4, 5))
  helper_test_op([(4, 1)], lambda x: x.expand((2, 4, 3)), lambda x: x.expand((2, 4, 3)))
  helper_test_op([(4, 1)], lambda x: x.expand(-1, 3), lambda x: x.expand(-1, 3))
  helper_test_op([()], lambda x: x.expand(3, 2), lambda x: x.expand(3, 2))
  helper_test_op([(1, 3, 1)], lambda x: x.squeeze(), lambda x: x.squeeze())
  helper_test_op([(1, 3, 1)], lambda x: x.squeeze(-1), lambda x: x.squeeze(-1))
  helper_test_op([(1, 3, 1)], lambda x: x.squeeze(1), lambda x: x.squeeze(1))
  helper_test_op([(3, 4)], lambda x: x.unsqueeze(0), lambda x: x.unsqueeze(0))
  helper_test_op([(3, 4)], lambda x: x.unsqueeze(-1), lambda x: x.unsqueeze(-1))
  helper_test_op([(2, 3)], lambda x: x.repeat(2, 1, 3), lambda x: x.repeat(2, 1, 3))
  helper_test_op([(2, 3)], lambda x: x.repeat((1, 2)), lambda x: x.repeat((1, 2)))


def test_flip_roll():
  helper_test_op([(3, 4, 5)], lambda x: x.flip(0), lambda x: x.flip(0))
  helper_test_op([(3, 4, 5)], lambda x: x.flip((0, -1)), lambda x: x.flip((0, -1)))
  helper_test_op([(3, 4, 5)], lambda x: x.flip(1, 2), lambda x: x.flip(1, 2))
  helper_test_op([(3, 4)], lambda x: x.roll(1, 0), lambda x: x.roll(1, 0))
  helper_test_op([(3, 4)], lambda x: x.roll((-1, 2), (0, 1)), lambda x: x.roll((-1, 2), (0, 1)))
  helper_test_op([(3, 4)], lambda x: x.roll(5), lambda x: x.roll(5))
  helper_test_op([(3, 4)], lambda x: x.roll((5,)), lambda x: x.roll((5,)))


def test_pad_shrink():
  import torch.nn.functional as F
  helper_test_op([(3, 4)], lambda x: F.pad(x, (1, 2, 3, 4)), lambda x: x.pad(((3, 4), (1, 2))))
  helper_test_op([(3, 4)], lambda x: F.pad(x, (1, 2)), lambda x: x.pad((1, 2)))
  helper_test_op([(3, 4)], lambda x: F.pad(x, (1, 2, 0, 0)), lambda x: x.pad((None, (1, 2))))
  helper_test_op([(3, 4)], lambda x: F.pad(x, (1, 1, 1, 1), value=2.5), lambda x: x.pad((1, 1, 1, 1), value=2.5))
  helper_test_op([(3, 4)], lambda x: F.pad(x, (-1, 1, 0, -2)), lambda x: x.pad(((0, -2), (-1, 1))))
  helper_test_op([(1, 2, 3, 4)], lambda x: F.pad(x, (1, 2, 2, 1), mode="reflect"), lambda x: x.pad((1, 2, 2, 1), mode="reflect"))
  helper_test_op([(1, 2, 3, 4)], lambda x: F.pad(x, (1, 2, 2, 1), mode="replicate"), lambda x: x.pad((1, 2, 2, 1), mode="replicate"))
  helper_test_op([(1, 2, 3, 4)], lambda x: F.pad(x, (1, 2, 2, 1), mode="circular"), lambda x: x.pad((1, 2, 2, 1), mode="circular"))
  helper_test_op([(4, 5)], lambda x: x[1:3, 2:5], lambda x: x.shrink(((1, 3), (2, 5))))
  helper_test_op([(4, 5)], lambda x: x[:, 1:2], lambda x: x.shrink((None, (1, 2))))


def test_getitem():
  fns = [lambda x: x[1], lambda x: x[-1], lambda x: x[1:3], lambda x: x[:, -2:], lambda x: x[::2], lambda x: x[1:5:2, ::3],
         lambda x: x[None], lambda x: x[:, None, 1], lambda x: x[..., 0], lambda x: x[1, ..., None],
         lambda x: x[-3:-1, 1:], lambda x: x[0, 1, 2], lambda x: x[:, :, -1:]]
  for fn in fns: helper_test_op([(6, 5, 4)], fn)
  for fn in (lambda x: x[2:2], lambda x: x[10:], lambda x: x[:, 3:1]):  # empty results
    helper_test_op([(6, 5, 4)], fn, forward_only=True)
  # torch has no negative steps: compare with flips.
  helper_test_op([(6, 5, 4)], lambda x: x.flip(0), lambda x: x[::-1])
  helper_test_op([(6, 5, 4)], lambda x: x.flip(1)[:, ::2], lambda x: x[:, ::-2])


def test_getitem_tensor_index():
  idx = np.array([2, 0, 3, 3], np.int32)
  helper_test_op([(5, 4)], lambda x: x[torch.tensor(idx, dtype=torch.long)], lambda x: x[Tensor(idx)])
  helper_test_op([(5, 4)], lambda x: x[:, torch.tensor([1, -1])], lambda x: x[:, [1, -1]])


def test_gather_scatter_tril_triu_one_hot():
  idx = np.array([[0, 2, 1], [3, 3, 0]], np.int64)
  helper_test_op([(2, 4)], lambda x: x.gather(1, torch.tensor(idx)), lambda x: x.gather(1, Tensor(idx)))
  helper_test_op([(4, 3)], lambda x: x.gather(0, torch.tensor(idx[:, :3] % 4)), lambda x: x.gather(0, Tensor(idx[:, :3] % 4)))
  sidx = np.array([[0, 1, 2], [2, 0, 1]], np.int64)
  helper_test_op([(2, 4), (2, 3)], lambda x, s: x.scatter(1, torch.tensor(sidx), s), lambda x, s: x.scatter(1, Tensor(sidx), s),
                 forward_only=True)
  helper_test_op([(2, 4)], lambda x: x.scatter(1, torch.tensor(sidx), 7.0), lambda x: x.scatter(1, Tensor(sidx), 7.0), forward_only=True)
  for d in (-1, 0, 2):
    helper_test_op([(4, 5)], lambda x: x.tril(d), lambda x: x.tril(d))
    helper_test_op([(4, 5)], lambda x: x.triu(d), lambda x: x.triu(d))
  import torch.nn.functional as F
  helper_test_op(None, lambda x: F.one_hot(x.long(), 5).int(), lambda x: x.one_hot(5), vals=[[0, 3, 4, 1]], forward_only=True)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_stack_split_chunk(dim):
  helper_test_op([(3, 4), (3, 4), (3, 4)], lambda a, b, c: torch.cat((a, b, c), dim), lambda a, b, c: a.cat(b, c, dim=dim))
  helper_test_op([(3, 4), (3, 4)], lambda a, b: torch.stack((a, b), dim), lambda a, b: Tensor.stack(a, b, dim=dim))
  helper_test_op([(6, 6)], lambda x: x.split(2, dim)[1], lambda x: x.split(2, dim)[1])
  helper_test_op([(6, 6)], lambda x: x.split([1, 5], dim)[1], lambda x: x.split([1, 5], dim)[1])
  helper_test_op([(6, 6)], lambda x: x.chunk(3, dim)[2], lambda x: x.chunk(3, dim)[2])
  helper_test_op([(0, 4), (3, 4)], lambda a, b: torch.cat((a, b), 0), lambda a, b: a.cat(b, dim=0), forward_only=True)


def test_indexing_follows_torch_placement_and_errors():
  # ints are basic indices applied first (torch, tinygrad), tuples inside the index are index lists
  i = torch.tensor([[0, 1, -1], [2, 0, 1]])
  for fn in (lambda x, i: x[1, :, i], lambda x, i: x[:, i, 1, i], lambda x, i: x[i, 2, :, i], lambda x, i: x[(0, 1, 2), i],
             lambda x, i: x[1, (2, 1, 0), None, i]):
    helper_test_op([(3, 4, 5, 6)], lambda x: fn(x, i), lambda x: fn(x, Tensor(i.numpy().astype(np.int32))))
  a = Tensor.ones(4, 3)
  with pytest.raises(IndexError, match="too many"): a[1, 77, 77]
  with pytest.raises(IndexError, match="out of bounds"): a[1, 3]
  with pytest.raises(IndexError, match="single ellipsis"): a[..., ...]
  with pytest.raises(IndexError): a[Tensor(1.5)]
  with pytest.raises(IndexError): a[[True, False]]
  with pytest.raises(IndexError): a[Tensor([[0, 1]]), Tensor([0, 1, 2])]
  with pytest.raises(TypeError): a[:Tensor([3]), 1]
  with pytest.raises(IndexError): Tensor(2)[:]


def test_movement_error_types_match_tinygrad():
  x = Tensor.ones(4, 3, 6, 6)
  with pytest.raises(ValueError): x.reshape([])
  with pytest.raises(RuntimeError): Tensor.ones(3, 4).reshape(-1, -1, 2)
  with pytest.raises(ValueError): Tensor.ones(4, 6, 3).repeat((2, 4))
  with pytest.raises(NotImplementedError): Tensor.ones(3, 3, 3).pad((3, 0), mode="typo")
  with pytest.raises(NotImplementedError): Tensor.ones(1, 1, 5, 5).pad((3, -5, 1, -5), mode="circular")
  with pytest.raises(IndexError): Tensor.stack(Tensor.ones(4, 5), dim=77)
  with pytest.raises(ValueError): Tensor.stack((Tensor([1, 2]), Tensor([3, 4])), Tensor([5, 6]))
  assert Tensor.stack((Tensor([1, 2]), Tensor([3, 4])), dim=1).tolist() == [[1, 3], [2, 4]]
  assert Tensor.cat((Tensor([1]), Tensor([2]))).tolist() == [1, 2]
