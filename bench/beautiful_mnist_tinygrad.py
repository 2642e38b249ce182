#!/usr/bin/env python3
"""One beautiful_mnist training step (batch 512, Adam), tinygrad.cpp against upstream tinygrad, same machine
and data (Fashion-MNIST from Debian's dataset-fashion-mnist, read locally: nothing is downloaded).

Runs build/bench/beautiful_mnist_step (tinygrad.cpp), then the same model and step in upstream tinygrad on
its CPU device, and prints both medians and the ratio. Two tinygrad figures:
  host batch  - the batch is drawn on the host and passed in, as tinygrad.cpp's step does (the fair pair);
  upstream    - examples/beautiful_mnist.py's step as written: Tensor.randint + X_train[samples] inside the JIT.
Needs `pip install tinygrad numpy`.
Usage: python3 bench/beautiful_mnist_tinygrad.py [path/to/beautiful_mnist_step] [timed_steps] [data_dir]
"""
import gzip, os, statistics, subprocess, sys, time

here = os.path.dirname(os.path.abspath(__file__))
exe = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "build", "bench", "beautiful_mnist_step")
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 10
data = sys.argv[3] if len(sys.argv) > 3 else "/usr/share/datasets/fashion-mnist"
WARMUP, BS = 3, 512

ours = {}
out = subprocess.run([exe, str(steps), data], check=True, capture_output=True, text=True).stdout
for line in out.splitlines():
  k, v = line.split()
  ours[k] = float(v)

os.environ.setdefault("DEV", "CPU")
import numpy as np  # noqa: E402
from tinygrad import Tensor, TinyJit, nn, Context  # noqa: E402

def idx(name):
  path = os.path.join(data, name)
  raw = gzip.open(path + ".gz").read() if os.path.exists(path + ".gz") else open(path, "rb").read()
  return np.frombuffer(raw, dtype=np.uint8, offset=16 if "images" in name else 8)

X_np = idx("train-images-idx3-ubyte").reshape(-1, 1, 28, 28)
Y_np = idx("train-labels-idx1-ubyte")

class Model:
  def __init__(self):
    self.layers = [
      nn.Conv2d(1, 32, 5), Tensor.relu, nn.Conv2d(32, 32, 5), Tensor.relu, nn.BatchNorm(32), Tensor.max_pool2d,
      nn.Conv2d(32, 64, 3), Tensor.relu, nn.Conv2d(64, 64, 3), Tensor.relu, nn.BatchNorm(64), Tensor.max_pool2d,
      lambda x: x.flatten(1), nn.Linear(576, 10)]
  def __call__(self, x): return x.sequential(self.layers)

def median_ms(step, n):
  for _ in range(WARMUP): step()
  ts = []
  for _ in range(n):
    t0 = time.perf_counter(); step(); ts.append((time.perf_counter() - t0) * 1e3)
  return statistics.median(ts)

def host_batch_step():
  model = Model()
  opt = nn.optim.Adam(nn.state.get_parameters(model))
  @TinyJit
  @Context(TRAINING=1)
  def train_step(x, y):
    opt.zero_grad()
    loss = model(x).sparse_categorical_crossentropy(y).backward()
    return loss.realize(*opt.schedule_step())
  rng = np.random.default_rng(1337)
  def step():
    s = rng.integers(0, X_np.shape[0], BS)
    train_step(Tensor(X_np[s].copy()), Tensor(Y_np[s].copy())).item()
  return step

def upstream_step():
  model = Model()
  opt = nn.optim.Adam(nn.state.get_parameters(model))
  X_train, Y_train = Tensor(X_np.copy()).realize(), Tensor(Y_np.copy()).realize()
  @TinyJit
  @Context(TRAINING=1)
  def train_step():
    opt.zero_grad()
    samples = Tensor.randint(BS, high=X_train.shape[0])
    loss = model(X_train[samples]).sparse_categorical_crossentropy(Y_train[samples]).backward()
    return loss.realize(*opt.schedule_step())
  return lambda: train_step().item()

theirs_host = median_ms(host_batch_step(), steps)
theirs_upstream = median_ms(upstream_step(), steps)
print(f"beautiful_mnist training step, batch {BS}, median of {steps} steps after {WARMUP} warm-up steps (ms)")
print(f"  tinygrad.cpp (host batch)      {ours['median_ms']:10.1f}   first step {ours['first_ms']:.1f}")
print(f"  tinygrad     (host batch, JIT) {theirs_host:10.1f}   ratio {theirs_host / ours['median_ms']:.2f}x")
print(f"  tinygrad     (upstream step)   {theirs_upstream:10.1f}   ratio {theirs_upstream / ours['median_ms']:.2f}x")
