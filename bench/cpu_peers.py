#!/usr/bin/env python3
"""numpy's, torch's and (TINYGRAD=1) upstream tinygrad's figures for bench/cpu: the same work on the CPU, wall
time, median of `reps` runs.

Prints "peer name<TAB>seconds" lines (names match bench/cpu.cpp's rows; peer is numpy, torch or tinygrad) and
"info<TAB>..." lines naming the BLAS and thread counts. A peer that does not import is skipped quietly.
Upstream tinygrad runs only with TINYGRAD=1 (pip install tinygrad), on its CPU device with BEAM=TINYGRAD_BEAM
(default 2): its search runs in the warm-up call (about 90 s for the 1024 matmul here, then cached in its own
cache database), so the timed runs see the searched kernels.
Usage: python3 bench/cpu_peers.py [reps] [threads]
"""
import os
import sys
import time

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 10
threads = int(sys.argv[2]) if len(sys.argv) > 2 else 2


def median_seconds(f):
  f()
  ts = []
  for _ in range(reps):
    t0 = time.perf_counter()
    f()
    ts.append(time.perf_counter() - t0)
  ts.sort()
  return ts[len(ts) // 2]


def report(peer, name, f):
  print(f"{peer} {name}\t{median_seconds(f):.9g}", flush=True)


try:
  import numpy as np
  try:
    from threadpoolctl import threadpool_info, threadpool_limits
    threadpool_limits(threads)
    for p in threadpool_info():
      print(f"info\tnumpy {np.__version__}: {p.get('internal_api')} {p.get('version')} "
            f"{p.get('architecture')} threads={p.get('num_threads')}", flush=True)
  except ImportError:
    print(f"info\tnumpy {np.__version__} (no threadpoolctl: BLAS unknown)", flush=True)
  rng = np.random.default_rng(0)
  for n in (1024, 2048):
    a, b = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
    report("numpy", f"sgemm {n}", lambda: a @ b)
  s = rng.random(1 << 24, dtype=np.float32)
  report("numpy", "sum 16M", lambda: s.sum())
  x = rng.standard_normal((4096, 4096), dtype=np.float32)

  def np_softmax():
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
  report("numpy", "softmax 4096", np_softmax)
except ImportError:
  pass

try:
  import torch
  torch.set_num_threads(threads)
  print(f"info\ttorch {torch.__version__}: {torch.get_num_threads()} threads", flush=True)
  with torch.no_grad():
    for n in (1024, 2048):
      a, b = torch.randn(n, n), torch.randn(n, n)
      report("torch", f"sgemm {n}", lambda: a @ b)
    x, w = torch.randn(8, 32, 56, 56), torch.randn(32, 32, 3, 3)
    report("torch", "conv2d 3x3", lambda: torch.nn.functional.conv2d(x, w, padding=1))
    y = torch.randn(4096, 4096)
    report("torch", "softmax 4096", lambda: y.softmax(-1))
    s = torch.rand(1 << 24)
    report("torch", "sum 16M", lambda: s.sum())
except ImportError:
  pass

if os.environ.get("TINYGRAD") == "1":
  os.environ["BEAM"] = os.environ.get("TINYGRAD_BEAM", "2")
  os.environ.setdefault("DEV", "CPU")
  try:
    from importlib.metadata import version
    from tinygrad import Tensor, Device
    print(f"info\ttinygrad {version('tinygrad')} on {Device.DEFAULT}, BEAM={os.environ['BEAM']}", flush=True)
    for n in (1024, 2048):
      ta, tb = Tensor.randn(n, n).realize(), Tensor.randn(n, n).realize()
      report("tinygrad", f"sgemm {n}", lambda: (ta @ tb).realize())
    tx, tw = Tensor.randn(8, 32, 56, 56).realize(), Tensor.randn(32, 32, 3, 3).realize()
    report("tinygrad", "conv2d 3x3", lambda: tx.conv2d(tw, padding=1).realize())
    ty = Tensor.randn(4096, 4096).realize()
    report("tinygrad", "softmax 4096", lambda: ty.softmax(-1).realize())
    ts = Tensor.rand(1 << 24).realize()
    report("tinygrad", "sum 16M", lambda: ts.sum().realize())
  except ImportError:
    pass
