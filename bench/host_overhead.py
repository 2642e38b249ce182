#!/usr/bin/env python3
"""Host overhead of realize(), tinygrad.cpp against upstream tinygrad on the same machine.

Runs build/bench/host_overhead (tinygrad.cpp) and the same expressions in upstream tinygrad (CPU device,
kernels already compiled, no JIT), and prints both medians and the ratio. Needs `pip install tinygrad`.
Usage: python3 bench/host_overhead.py [path/to/host_overhead] [reps]
"""
import os, statistics, subprocess, sys, time

exe = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "build", "bench", "host_overhead")
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 2000

ours = {}
for line in subprocess.run([exe, str(reps)], check=True, capture_output=True, text=True).stdout.splitlines():
  name, us = line.split()
  ours[name] = float(us)

os.environ.setdefault("DEV", "CPU")
from tinygrad import Tensor  # noqa: E402

def median_us(f, n):
  for _ in range(5): f()
  ts = []
  for _ in range(n):
    t0 = time.perf_counter(); f(); ts.append((time.perf_counter() - t0) * 1e6)
  return statistics.median(ts)

a, b = Tensor.ones(1024).contiguous().realize(), Tensor.ones(1024).contiguous().realize()
m = Tensor.ones(64, 64).contiguous().realize()
def chain():
  x = a
  for _ in range(10): x = (x + b) * 0.5
  x.realize()
n = max(reps // 10, 50)  # tinygrad is slower per call: fewer repeats keep the run short
theirs = {
  "elementwise_1k": median_us(lambda: ((a + b) * 2).realize(), n),
  "chain10_1k": median_us(chain, n),
  "matmul_64": median_us(lambda: (m @ m).realize(), max(n // 4, 20)),
  "sum_rows_64": median_us(lambda: (m.sum(1) * 2).realize(), n),
}
print(f"{'case':16s} {'tinygrad.cpp us':>16s} {'tinygrad us':>12s} {'speedup':>8s}")
for k, v in ours.items():
  print(f"{k:16s} {v:16.2f} {theirs[k]:12.2f} {theirs[k] / v:7.1f}x")
