#!/usr/bin/env python3
"""torch's figures for bench/gpu_kernels: the same work, kernel time by CUDA events, median of `reps` runs.

Prints "name<TAB>seconds" lines (the names match bench/gpu_kernels.cpp's rows; "copy" is a device-to-device
copy of 2^28 floats, the memory roofline). Exits quietly with nothing printed when torch or a GPU is missing.
Usage: python3 bench/gpu_kernels_torch.py [reps]
"""
import sys

try:
  import torch
except ImportError:
  sys.exit(0)
if not torch.cuda.is_available():
  sys.exit(0)

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 10
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = "cuda"


def median_seconds(f):
  f()
  torch.cuda.synchronize()
  ts = []
  for _ in range(reps):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    f()
    e.record()
    torch.cuda.synchronize()
    ts.append(s.elapsed_time(e) / 1e3)
  ts.sort()
  return ts[len(ts) // 2]


def report(name, f):
  print(f"{name}\t{median_seconds(f):.9g}", flush=True)


def mm(n, dt, wt=False, xt=False):
  a, b = torch.randn(n, n, device=dev, dtype=dt), torch.randn(n, n, device=dev, dtype=dt)
  return (lambda: a @ b.T) if wt else (lambda: a.T @ b) if xt else (lambda: a @ b)


big = 1 << 28
x, y = torch.randn(big, device=dev), torch.randn(big, device=dev)
out = torch.empty_like(x)
report("copy", lambda: out.copy_(x))
report("matmul fp16 4096", mm(4096, torch.float16))
report("matmul fp16 4096 x@W.T", mm(4096, torch.float16, True))
report("matmul fp16 4096 x.T@W", mm(4096, torch.float16, xt=True))
report("matmul fp16 8192", mm(8192, torch.float16))
report("matmul bf16 4096", mm(4096, torch.bfloat16))
report("matmul bf16 8192", mm(8192, torch.bfloat16))
report("matmul fp32 4096", mm(4096, torch.float32))


def tf32(f):
  def run():
    torch.backends.cuda.matmul.allow_tf32 = True
    r = f()
    torch.backends.cuda.matmul.allow_tf32 = False
    return r
  return run


report("matmul tf32 4096", tf32(mm(4096, torch.float32)))
report("matmul fp16 4096 fp16-acc", mm(4096, torch.float16))  # (cuBLAS accumulates in fp32: the nearest peer)
report("add 2^28 fp32", lambda: x + y)
xh, yh = x.half(), y.half()
report("add 2^28 fp16", lambda: xh + yh)
report("sum 2^28 fp32", lambda: x.sum())
gx, gw = torch.randn(1, 4096, device=dev, dtype=torch.float16), torch.randn(4096, 4096, device=dev, dtype=torch.float16)
report("gemv fp16 4096x4096", lambda: gx @ gw.T)
s = torch.randn(8192, 8192, device=dev)
report("softmax 8192x8192 fp32", lambda: s.softmax(-1))
report("log_softmax 8192x8192 fp32", lambda: s.log_softmax(-1))
report("layernorm 8192x8192 fp32", lambda: torch.nn.functional.layer_norm(s, (8192,)))
ci, cw = torch.randn(32, 64, 56, 56, device=dev, dtype=torch.float16), torch.randn(64, 64, 3, 3, device=dev, dtype=torch.float16)
report("conv2d 3x3 fp16 32x64x56x56", lambda: torch.nn.functional.conv2d(ci, cw, padding=1))
cb = torch.randn(64, device=dev, dtype=torch.float16)
report("conv2d 3x3 fp16 + bias + relu", lambda: torch.relu(torch.nn.functional.conv2d(ci, cw, cb, padding=1)))
mx, mw = torch.randn(512, 32, 24, 24, device=dev), torch.randn(32, 32, 5, 5, device=dev)
report("conv2d 5x5 fp32 512x32x24x24", lambda: torch.nn.functional.conv2d(mx, mw))
mdy = torch.randn(512, 32, 20, 20, device=dev)
report("conv2d 5x5 fp32 weight grad", lambda: torch.nn.grad.conv2d_weight(mx, mw.shape, mdy))
gx, gdy = torch.randn(512, 64, 10, 10, device=dev), torch.randn(512, 64, 8, 8, device=dev)
report("conv2d 3x3 fp32 weight grad 64", lambda: torch.nn.grad.conv2d_weight(gx, (64, 64, 3, 3), gdy))
