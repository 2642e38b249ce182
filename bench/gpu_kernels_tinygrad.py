#!/usr/bin/env python3
"""Upstream tinygrad's figures for bench/gpu_kernels (TINYGRAD=1): the same work on its default GPU device.

Kernel time is tinygrad's own: GlobalCounters.time_sum_s, which it sums over the kernels it waits for (it waits
for each kernel, and times it, under DEBUG>=2; the DEBUG lines themselves are discarded). Median of `reps` runs
after one warm-up run, which compiles (and, with BEAM=n, searches). Prints "name<TAB>seconds" lines with the names
of bench/gpu_kernels.cpp's rows; exits quietly when tinygrad or a GPU is missing.
Usage: BEAM=n python3 bench/gpu_kernels_tinygrad.py [reps] [filter]
"""
import contextlib
import io
import sys

try:
  from tinygrad import Tensor, Device, dtypes
  from tinygrad.helpers import Context, GlobalCounters
except ImportError:
  sys.exit(0)
if Device.DEFAULT in ("CPU", "CLANG", "LLVM", "DISK", "PYTHON", "NULL"):
  sys.exit(0)

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 10
only = sys.argv[2] if len(sys.argv) > 2 else ""


def kernel_seconds(f):
  with contextlib.redirect_stdout(io.StringIO()), Context(DEBUG=2):
    before = GlobalCounters.time_sum_s
    f().realize()
    return GlobalCounters.time_sum_s - before


def report(name, make):
  if only and only not in name:
    return
  f = make()
  kernel_seconds(f)
  ts = sorted(kernel_seconds(f) for _ in range(reps))
  print(f"{name}\t{ts[len(ts) // 2]:.9g}", flush=True)


def rand(*shape, dtype=dtypes.float32):
  return Tensor.randn(*shape).cast(dtype).contiguous().realize()


def mm(n, dt, wt=False, xt=False):
  def make():
    a, b = rand(n, n, dtype=dt), rand(n, n, dtype=dt)
    return (lambda: a @ b.T) if wt else (lambda: a.T @ b) if xt else (lambda: a @ b)
  return make


def unary(shape, op, dtype=dtypes.float32):
  def make():
    x = rand(*shape, dtype=dtype)
    return lambda: op(x)
  return make


def binary(shape, op, dtype=dtypes.float32):
  def make():
    x, y = rand(*shape, dtype=dtype), rand(*shape, dtype=dtype)
    return lambda: op(x, y)
  return make


def conv(bias):
  def make():
    x, w = rand(32, 64, 56, 56, dtype=dtypes.float16), rand(64, 64, 3, 3, dtype=dtypes.float16)
    b = rand(64, dtype=dtypes.float16)
    return (lambda: x.conv2d(w, b, padding=1).relu()) if bias else (lambda: x.conv2d(w, padding=1))
  return make


big = 1 << 28
report("matmul fp16 4096", mm(4096, dtypes.float16))
report("matmul fp16 4096 x@W.T", mm(4096, dtypes.float16, True))
report("matmul fp16 4096 x.T@W", mm(4096, dtypes.float16, xt=True))
report("matmul fp16 8192", mm(8192, dtypes.float16))
report("matmul bf16 4096", mm(4096, dtypes.bfloat16))
report("matmul fp32 4096", mm(4096, dtypes.float32))
report("add 2^28 fp32", binary((big,), lambda x, y: x + y))
report("add 2^28 fp16", binary((big,), lambda x, y: x + y, dtypes.float16))
report("sum 2^28 fp32", unary((big,), lambda x: x.sum()))
def gemv():
  x, w = rand(1, 4096, dtype=dtypes.float16), rand(4096, 4096, dtype=dtypes.float16)
  return lambda: x @ w.T


report("gemv fp16 4096x4096", gemv)
report("softmax 8192x8192 fp32", unary((8192, 8192), lambda x: x.softmax(-1)))
report("log_softmax 8192x8192 fp32", unary((8192, 8192), lambda x: x.log_softmax(-1)))
report("layernorm 8192x8192 fp32", unary((8192, 8192), lambda x: x.layernorm(-1)))
report("conv2d 3x3 fp16 32x64x56x56", conv(False))
report("conv2d 3x3 fp16 + bias + relu", conv(True))
