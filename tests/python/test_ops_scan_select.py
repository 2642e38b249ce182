"""The cumulative ops, diagonal, unfold, scatter_reduce and masked_select against PyTorch: forward and gradient,
0- and 1-sized dims, negative axes, long axes (the two-stage scan), every reduce mode and the error types."""
import numpy as np
import pytest
import torch
from op_helpers import helper_test_op
from tinygrad_cpp import Tensor, dtypes

SCAN_SHAPES = [((20,), 0), ((20, 30), 0), ((20, 30), 1), ((4, 5, 6), -1), ((1,), 0), ((3, 1), 1), ((2, 0, 4), 1),
               ((), 0), ((1100,), 0)]


@pytest.mark.parametrize("shape,axis", SCAN_SHAPES, ids=str)
def test_cumprod(shape, axis):
  helper_test_op([shape], lambda x: torch.cumprod(x, dim=axis), lambda x: x.cumprod(axis), low=0.5, high=1.5, atol=1e-4)


@pytest.mark.parametrize("shape,axis", SCAN_SHAPES, ids=str)
def test_cummax(shape, axis):
  helper_test_op([shape], lambda x: torch.cummax(x, dim=axis).values, lambda x: x.cummax(axis))


@pytest.mark.parametrize("shape,axis", [s for s in SCAN_SHAPES if s[0] != (1100,)] + [((600,), 0)], ids=str)
def test_logcumsumexp(shape, axis):
  helper_test_op([shape], lambda x: torch.logcumsumexp(x, dim=axis), lambda x: x.logcumsumexp(axis), atol=1e-5)


def test_scans_stay_finite_and_keep_dtypes():
  helper_test_op(None, lambda x: torch.logcumsumexp(x, dim=0), lambda x: x.logcumsumexp(), vals=[[0.0, 100.0, -100.0]])
  helper_test_op(None, lambda x: torch.cummax(x, dim=0).values, lambda x: x.cummax(0),
                 vals=[[1, -3, 7, 7, 2]], forward_only=True)
  assert Tensor([2, 3, 4], dtype=dtypes.int8).cumprod(0).dtype == dtypes.int8
  assert Tensor([True, True, False, True]).cumprod(0).tolist() == [True, True, False, False]
  with pytest.raises(IndexError): Tensor.ones(3).cumprod(1)
  with pytest.raises(IndexError): Tensor.ones(3).cummax(-2)


@pytest.mark.parametrize("shape,offset,d1,d2", [((5, 5), 0, 0, 1), ((4, 6), 2, 0, 1), ((6, 4), -3, 0, 1),
                                                ((2, 3, 4), 1, 1, 2), ((3, 4, 5), -1, 2, 0), ((3, 3), 5, 0, 1),
                                                ((0, 3), 0, 0, 1), ((1, 1), 0, -2, -1)], ids=str)
def test_diagonal(shape, offset, d1, d2):
  helper_test_op([shape], lambda x: torch.diagonal(x, offset, d1, d2), lambda x: x.diagonal(offset, d1, d2))


def test_diagonal_errors():
  with pytest.raises(RuntimeError, match="at least 2 dims"): Tensor.ones(3).diagonal()
  with pytest.raises(RuntimeError, match="both"): Tensor.ones(3, 3).diagonal(0, 1, 1)


@pytest.mark.parametrize("shape,dim,size,step", [((8,), 0, 2, 1), ((8,), 0, 2, 2), ((8,), 0, 7, 3), ((3, 3, 3), 2, 2, 8),
                                                 ((3, 3, 3), 1, 0, 8), ((3, 3, 3, 3, 3), -1, 2, 2), ((4, 5), 0, 4, 1),
                                                 ((), 0, 1, 1)], ids=str)
def test_unfold(shape, dim, size, step):
  helper_test_op([shape], lambda x: x.unfold(dim, size, step))


def test_unfold_errors():
  with pytest.raises(RuntimeError, match="larger than"): Tensor.ones(8).unfold(0, 9, 3)
  with pytest.raises(IndexError): Tensor.ones(8).unfold(1, 8, 3)
  with pytest.raises(RuntimeError, match="step"): Tensor.ones(8).unfold(0, 2, 0)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [-1, 1, -3])
def test_scatter_reduce(reduce, include_self, dim):
  idx = torch.randint(3, size=(3, 4, 5), generator=torch.Generator().manual_seed(dim + 7))
  ours = Tensor(idx.numpy().astype(np.int32))
  helper_test_op([(3, 4, 5), (3, 4, 5)],
                 lambda x, s: x.scatter_reduce(dim, idx, s, reduce=reduce, include_self=include_self),
                 lambda x, s: x.scatter_reduce(dim, ours, s, reduce=reduce, include_self=include_self), forward_only=True)


def test_scatter_reduce_ints_and_errors():
  x, idx, src = [[10, 20, 30]], [[0, 0, 2]], [[3, 4, 5]]
  for reduce in ("sum", "prod", "mean", "amax", "amin"):
    want = torch.tensor(x).scatter_reduce(1, torch.tensor(idx), torch.tensor(src), reduce).tolist()
    assert Tensor(x).scatter_reduce(1, Tensor(idx), Tensor(src), reduce).tolist() == want, reduce
  with pytest.raises(RuntimeError, match="reduce must be one of"):
    Tensor(x).scatter_reduce(1, Tensor(idx), Tensor(src), "INVALID")
  with pytest.raises(RuntimeError, match="same dtype"):
    Tensor(x).float().scatter_reduce(1, Tensor(idx), Tensor(src), "sum")


def test_masked_select():
  helper_test_op([(32, 10)], lambda x: x.masked_select(x > 0.5), lambda x: x.masked_select(x > 0.5), forward_only=True)
  helper_test_op([(32, 10)], lambda x: x.masked_select(torch.tensor(True)), lambda x: x.masked_select(Tensor(True)),
                 forward_only=True)
  helper_test_op([(4, 3)], lambda x: x.masked_select(torch.tensor([True, False, True])),
                 lambda x: x.masked_select(Tensor([True, False, True])))  # broadcast mask, with a gradient
  assert Tensor([1, 2, 3]).masked_select(Tensor([False] * 3)).shape == (0,)
  with pytest.raises(RuntimeError, match="bool"): Tensor([1, 2]).masked_select(Tensor([1, 0]))
