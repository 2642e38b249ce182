"""Linear algebra and nn functional ops against PyTorch: matmul, conv, pools, norms, attention, losses."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from op_helpers import helper_test_op
from tinygrad_cpp import Tensor, dtypes


@pytest.mark.parametrize("shps", [[(4, 5), (5, 3)], [(5,), (5, 3)], [(4, 5), (5,)], [(7,), (7,)], [(2, 3, 4, 5), (5, 6)],
                                  [(2, 1, 4, 5), (3, 5, 2)], [(1, 1), (1, 1)], [(3, 1), (1, 4)]], ids=str)
def test_matmul(shps):
  helper_test_op(shps, lambda x, y: x @ y, atol=1e-4)
  helper_test_op(shps, lambda x, y: x.matmul(y), lambda x, y: x.dot(y), atol=1e-4)


def test_matmul_scalar_forms():
  helper_test_op([(3, 4), (4, 2)], lambda x, y: torch.matmul(x, y), lambda x, y: y.matmul(x, reverse=True), atol=1e-4)
  a = np.arange(6, dtype=np.float32).reshape(2, 3)
  np.testing.assert_allclose((Tensor(a) @ Tensor.ones(3, 4)).numpy(), a @ np.ones((3, 4), np.float32))


def test_matmul_and_sum_accumulate_in_the_dtype_asked_for():
  # tinygrad's dtype=: the sum runs in that dtype (float16: 2048 + 1 rounds back to 2048 at every step)
  x = Tensor([2048.0, 1, 1, 1, 1]).half()
  assert x.sum().item() == 2052 and x.sum(dtype="float32").dtype == dtypes.float32
  assert x.sum(dtype=dtypes.half).item() == 2048 and x.sum(dtype=dtypes.half).dtype == dtypes.half
  assert Tensor([100, 100], dtype=dtypes.int8).sum(dtype=dtypes.int8).item() == -56
  a, b = np.arange(12, dtype=np.float32).reshape(3, 4), np.arange(8, dtype=np.float32).reshape(4, 2)
  for f in (lambda x, y: x.matmul(y, dtype=dtypes.half), lambda x, y: x.dot(y, dtype=dtypes.half),
            lambda x, y: y.matmul(x, reverse=True, dtype=dtypes.half)):
    r = f(Tensor(a).half(), Tensor(b).half())
    assert r.dtype == dtypes.half
    np.testing.assert_array_equal(r.numpy(), (a @ b).astype(np.float16))


def test_linear_einsum():
  helper_test_op([(4, 5), (5, 3), (3,)], lambda x, w, b: x @ w + b, lambda x, w, b: x.linear(w, b), atol=1e-4)
  helper_test_op([(4, 5), (5,)], lambda x, w: x * w, lambda x, w: x.linear(w), atol=1e-5)
  helper_test_op([(3, 4), (4, 5)], lambda a, b: torch.einsum("ij,jk->ik", a, b), lambda a, b: Tensor.einsum("ij,jk->ik", a, b), atol=1e-4)
  helper_test_op([(2, 3, 4), (2, 4, 5)], lambda a, b: torch.einsum("bij,bjk->bik", a, b),
                 lambda a, b: Tensor.einsum("bij,bjk->bik", [a, b]), atol=1e-4)
  helper_test_op([(3, 3)], lambda a: torch.einsum("ii->i", a), lambda a: Tensor.einsum("ii->i", a))
  helper_test_op([(3, 4)], lambda a: torch.einsum("ij->ji", a), lambda a: Tensor.einsum("ij->ji", a))


CONV_CASES = [  # (x shape, w shape, kwargs)
  ((2, 3, 9, 9), (4, 3, 3, 3), {}),
  ((2, 3, 9, 9), (4, 3, 3, 3), {"stride": 2}),
  ((2, 3, 9, 9), (4, 3, 3, 3), {"padding": 1}),
  ((2, 3, 9, 9), (4, 3, 2, 3), {"padding": (1, 0), "stride": (2, 1)}),
  ((2, 3, 9, 9), (4, 3, 3, 3), {"dilation": 2}),
  ((2, 4, 7, 7), (6, 2, 3, 3), {"groups": 2}),
  ((1, 1, 5, 5), (1, 1, 1, 1), {}),
  ((2, 3, 11), (4, 3, 3), {"padding": 1}),
]


@pytest.mark.parametrize("xs,ws,kw", CONV_CASES, ids=lambda v: str(v))
def test_conv2d(xs, ws, kw):
  tfn = F.conv1d if len(xs) == 3 else F.conv2d
  helper_test_op([xs, ws, (ws[0],)], lambda x, w, b: tfn(x, w, b, **kw),
                 lambda x, w, b: x.conv2d(w, b, **kw), atol=1e-4, grad_atol=1e-3)
  helper_test_op([xs, ws], lambda x, w: tfn(x, w, **kw), lambda x, w: x.conv2d(w, **kw), atol=1e-4, grad_atol=1e-3)


@pytest.mark.parametrize("kw", [{}, {"stride": 2}, {"stride": 2, "padding": 1}, {"stride": 2, "output_padding": 1},
                                {"dilation": 2}, {"groups": 2}], ids=str)
def test_conv_transpose2d(kw):
  ws = (4, 3 if "groups" not in kw else 3, 3, 3)
  helper_test_op([(2, 4, 5, 5), ws], lambda x, w: F.conv_transpose2d(x, w, **kw),
                 lambda x, w: x.conv_transpose2d(w, **kw), atol=1e-4, grad_atol=1e-3)


@pytest.mark.parametrize("kw", [{"kernel_size": 2}, {"kernel_size": (2, 3)}, {"kernel_size": 3, "stride": 1},
                                {"kernel_size": 3, "stride": 2, "padding": 1}, {"kernel_size": 2, "dilation": 2}], ids=str)
def test_pools(kw):
  tk = dict(kw)
  helper_test_op([(2, 3, 8, 9)], lambda x: F.max_pool2d(x, **tk), lambda x: x.max_pool2d(**kw))
  if "dilation" not in kw:  # torch's avg_pool2d has no dilation
    helper_test_op([(2, 3, 8, 9)], lambda x: F.avg_pool2d(x, **tk), lambda x: x.avg_pool2d(**kw), atol=1e-5)


@pytest.mark.parametrize("kw", [{"kernel_size": 3, "stride": 3, "padding": 1}, {"kernel_size": (3, 2), "stride": 3, "padding": 1},
                                {"kernel_size": 4, "stride": 3, "padding": 1}, {"kernel_size": 3, "stride": 2},
                                {"kernel_size": 2, "stride": 2, "padding": 1}], ids=str)
def test_pools_ceil_mode_and_padding_counts(kw):
  for shape in [(1, 1, 6, 6), (1, 2, 5, 5), (2, 1, 7, 4)]:
    helper_test_op([shape], lambda x: F.max_pool2d(x, ceil_mode=True, **kw), lambda x: x.max_pool2d(ceil_mode=True, **kw))
    for ceil in (False, True):
      for include in (False, True):
        helper_test_op([shape], lambda x: F.avg_pool2d(x, ceil_mode=ceil, count_include_pad=include, **kw),
                       lambda x: x.avg_pool2d(ceil_mode=ceil, count_include_pad=include, **kw), atol=1e-5)


@pytest.mark.parametrize("kw", [{"kernel_size": 2}, {"kernel_size": (3, 2), "dilation": (2, 3)}, {"kernel_size": 3, "padding": 1},
                                {"kernel_size": 3, "stride": 3, "padding": 1, "ceil_mode": True}], ids=str)
def test_max_pool_indices_and_unpool(kw):
  x = torch.randn(2, 3, 10, 10)
  tv, ti = F.max_pool2d(x, return_indices=True, **kw)
  v, i = Tensor(x.numpy()).max_pool2d(return_indices=True, **kw)
  assert i.dtype == dtypes.int32
  np.testing.assert_allclose(v.numpy(), tv.numpy())
  np.testing.assert_equal(i.numpy(), ti.numpy())
  ukw = {k: kw[k] for k in ("kernel_size", "padding") if k in kw}
  if "dilation" not in kw and "ceil_mode" not in kw:  # torch's max_unpool2d has neither
    helper_test_op([(2, 3, 10, 10)], lambda t: F.max_unpool2d(*F.max_pool2d(t, return_indices=True, **kw), **ukw, output_size=(10, 10)),
                   lambda t: Tensor.max_unpool2d(*t.max_pool2d(return_indices=True, **kw), **ukw, output_size=(10, 10)))
  ties = Tensor.ones(1, 1, 4, 4).max_pool2d(return_indices=True)[1]  # the first max of each window
  assert ties.tolist() == [[[[0, 2], [8, 10]]]]


def test_pool_padding_form_errors():
  with pytest.raises(ValueError): Tensor.ones(1, 1, 4, 4).avg_pool2d(kernel_size=(2, 2), padding=(1, 1, 1))


def test_pool_3d():
  helper_test_op([(1, 2, 9, 9, 9)], lambda x: F.avg_pool3d(x, kernel_size=(4, 4, 4), stride=3, padding=1, count_include_pad=False),
                 lambda x: x.avg_pool2d(kernel_size=(4, 4, 4), stride=3, padding=1, count_include_pad=False), atol=1e-5)
  helper_test_op([(1, 2, 6, 6, 6)], lambda x: F.max_pool3d(x, kernel_size=3, stride=2, ceil_mode=True),
                 lambda x: x.max_pool2d(kernel_size=(3, 3, 3), stride=2, ceil_mode=True))


def test_norms():
  helper_test_op([(3, 4, 5)], lambda x: F.layer_norm(x, (5,)), lambda x: x.layernorm(), atol=1e-5, grad_atol=1e-3)
  helper_test_op([(3, 4, 5)], lambda x: F.layer_norm(x.transpose(1, 2), (4,)).transpose(1, 2),
                 lambda x: x.layernorm(axis=1), atol=1e-5, grad_atol=1e-3)
  helper_test_op([(4, 3, 2, 2), (3,), (3,), (3,), (3,)],
                 # torch's batch_norm does not differentiate the statistics: the formula, written out.
                 lambda x, w, b, m, v: (x - m[:, None, None]) * (v.abs() + 0.1 + 1e-5).rsqrt()[:, None, None] * w[:, None, None] + b[:, None, None],
                 lambda x, w, b, m, v: x.batchnorm(w, b, m, (v.abs() + 0.1 + 1e-5).rsqrt()), atol=1e-5, grad_atol=1e-3)


def test_softmax_attention():
  def ref(q, k, v, mask=None, causal=False):
    s = q @ k.transpose(-2, -1) / np.sqrt(q.shape[-1])
    if causal: s = s.masked_fill(torch.ones(s.shape[-2], s.shape[-1]).tril().logical_not(), float("-inf"))
    if mask is not None: s = s + mask
    return s.softmax(-1) @ v
  helper_test_op([(2, 3, 4, 8)] * 3, ref, lambda q, k, v: q.scaled_dot_product_attention(k, v), atol=1e-5)
  helper_test_op([(2, 3, 4, 8)] * 3, lambda q, k, v: ref(q, k, v, causal=True),
                 lambda q, k, v: q.scaled_dot_product_attention(k, v, is_causal=True), atol=1e-5)
  helper_test_op([(2, 3, 4, 8)] * 3 + [(4, 4)], lambda q, k, v, m: ref(q, k, v, mask=m),
                 lambda q, k, v, m: q.scaled_dot_product_attention(k, v, attn_mask=m), atol=1e-5)


def test_losses():
  labels = np.array([1, 0, 3, 2, 3], np.int32)
  helper_test_op([(5, 4)], lambda x: F.cross_entropy(x, torch.tensor(labels, dtype=torch.long)),
                 lambda x: x.sparse_categorical_crossentropy(Tensor(labels)), atol=1e-5)
  helper_test_op([(5, 4)], lambda x: F.cross_entropy(x, torch.tensor(labels, dtype=torch.long), label_smoothing=0.1),
                 lambda x: x.sparse_categorical_crossentropy(Tensor(labels), label_smoothing=0.1), atol=1e-5)
  helper_test_op([(5, 4)], lambda x: F.cross_entropy(x, torch.tensor(labels, dtype=torch.long)),
                 lambda x: x.cross_entropy(Tensor(labels)), atol=1e-5)
  helper_test_op([(5, 4), (5, 4)], lambda x, y: F.cross_entropy(x, y.softmax(-1)),
                 lambda x, y: x.cross_entropy(y.softmax(-1)), atol=1e-5)
  helper_test_op([(5, 4), (5, 4)], lambda x, y: F.binary_cross_entropy(x.sigmoid(), y.sigmoid()),
                 lambda x, y: x.sigmoid().binary_crossentropy(y.sigmoid()), atol=1e-5)
  helper_test_op([(5, 4), (5, 4)], lambda x, y: F.binary_cross_entropy_with_logits(x, y.sigmoid()),
                 lambda x, y: x.binary_crossentropy_logits(y.sigmoid()), atol=1e-5)
  helper_test_op([(5, 4), (5, 4)], lambda x, y: F.binary_cross_entropy_with_logits(x, y.sigmoid(), reduction="sum"),
                 lambda x, y: x.binary_crossentropy_logits(y.sigmoid(), reduction="sum"), atol=1e-4)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_loss_reductions(reduction):
  labels = [0, 3, 1, 2, 3]
  tl = torch.tensor(labels, dtype=torch.long)
  helper_test_op([(5, 4)], lambda x: F.cross_entropy(x, tl, reduction=reduction),
                 lambda x: x.sparse_categorical_crossentropy(Tensor(labels), reduction=reduction), atol=1e-5)
  helper_test_op([(5, 4)], lambda x: F.cross_entropy(x, tl, reduction=reduction, ignore_index=3),
                 lambda x: x.sparse_categorical_crossentropy(Tensor(labels), ignore_index=3, reduction=reduction), atol=1e-5)
  helper_test_op([(5, 4)], lambda x: F.cross_entropy(x, tl, reduction=reduction, label_smoothing=0.2),
                 lambda x: x.cross_entropy(Tensor(labels), reduction=reduction, label_smoothing=0.2), atol=1e-5)
  helper_test_op([(5, 4), (5, 4)], lambda x, y: F.binary_cross_entropy(x.sigmoid(), y.sigmoid(), reduction=reduction),
                 lambda x, y: x.sigmoid().binary_crossentropy(y.sigmoid(), reduction=reduction), atol=1e-5)
  pw = [0.5, 2.0, 1.0, 3.0]
  helper_test_op([(5, 4), (5, 4)],
                 lambda x, y: F.binary_cross_entropy_with_logits(x, y.sigmoid(), reduction=reduction, pos_weight=torch.tensor(pw)),
                 lambda x, y: x.binary_crossentropy_logits(y.sigmoid(), reduction=reduction, pos_weight=Tensor(pw)), atol=1e-5)


def test_loss_reduction_errors():
  with pytest.raises(ValueError, match="reduction must be"):
    Tensor.ones(2, 3).cross_entropy(Tensor([0, 1]), reduction="avg")


@pytest.mark.parametrize("mode,size,ac", [("linear", (4,), False), ("linear", (9,), True), ("nearest", (7,), False)], ids=str)
def test_interpolate_1d(mode, size, ac):
  tkw = {"align_corners": ac} if mode == "linear" else {}
  helper_test_op([(2, 3, 5)], lambda x: F.interpolate(x, size=size, mode=mode, **tkw),
                 lambda x: x.interpolate(size, mode=mode, align_corners=ac), atol=1e-5)


def test_interpolate_2d():
  helper_test_op([(1, 2, 4, 5)], lambda x: F.interpolate(x, size=(7, 3), mode="bilinear", align_corners=False),
                 lambda x: x.interpolate((7, 3), mode="linear"), atol=1e-5)
  helper_test_op([(1, 2, 4, 5)], lambda x: F.interpolate(x, size=(8, 10), mode="nearest"),
                 lambda x: x.interpolate((8, 10), mode="nearest"), atol=1e-5)
