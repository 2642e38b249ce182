#!/usr/bin/env python3
"""One beautiful_mnist training step (batch 512, Adam, Fashion-MNIST), tinygrad.cpp against torch on the CPU,
same machine and data, in one run: runs build/bench/beautiful_mnist_step, then the same model and step in
torch (conv 1->32 5x5, 32->32 5x5, BatchNorm, max-pool, conv 32->64 3x3, 64->64 3x3, BatchNorm, max-pool,
linear 576->10; the batch drawn on the host), and prints both medians and the ratio.
Usage: python3 bench/beautiful_mnist_torch.py [path/to/beautiful_mnist_step] [timed_steps] [data_dir] [threads]
"""
import gzip, os, statistics, subprocess, sys, time

here = os.path.dirname(os.path.abspath(__file__))
exe = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "build", "bench", "beautiful_mnist_step")
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 10
data = sys.argv[3] if len(sys.argv) > 3 else "/usr/share/datasets/fashion-mnist"
threads = int(sys.argv[4]) if len(sys.argv) > 4 else 2
WARMUP, BS = 3, 512

ours = {}
out = subprocess.run([exe, str(steps), data], check=True, capture_output=True, text=True).stdout
for line in out.splitlines():
  k, v = line.split()
  ours[k] = float(v)

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

torch.set_num_threads(threads)
with gzip.open(os.path.join(data, "train-images-idx3-ubyte.gz")) as f:
  X = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
with gzip.open(os.path.join(data, "train-labels-idx1-ubyte.gz")) as f:
  Y = np.frombuffer(f.read(), np.uint8, offset=8)

model = nn.Sequential(nn.Conv2d(1, 32, 5), nn.ReLU(), nn.Conv2d(32, 32, 5), nn.ReLU(), nn.BatchNorm2d(32), nn.MaxPool2d(2),
                      nn.Conv2d(32, 64, 3), nn.ReLU(), nn.Conv2d(64, 64, 3), nn.ReLU(), nn.BatchNorm2d(64), nn.MaxPool2d(2),
                      nn.Flatten(1), nn.Linear(576, 10))
opt = torch.optim.Adam(model.parameters())
rng = np.random.default_rng(1337)
ms = []
for s in range(WARMUP + steps):
  t0 = time.perf_counter()
  idx = rng.integers(0, len(X), BS)
  x, y = torch.from_numpy(X[idx].astype(np.float32)), torch.from_numpy(Y[idx].astype(np.int64))
  opt.zero_grad()
  loss = nn.functional.cross_entropy(model(x), y)
  loss.backward()
  opt.step()
  loss.item()
  ms.append((time.perf_counter() - t0) * 1e3)
theirs = statistics.median(ms[WARMUP:])
print(f"tinygrad.cpp step: {ours['median_ms']:.1f} ms (first {ours['first_ms']:.0f} ms)")
print(f"torch {torch.__version__} step ({torch.get_num_threads()} threads): {theirs:.1f} ms")
print(f"tinygrad.cpp / torch time: {ours['median_ms'] / theirs:.2f}x")
