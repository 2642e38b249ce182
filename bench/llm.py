#!/usr/bin/env python3
"""LLM prefill and decode speed: examples/llm beside llama.cpp (PyPI's llama-cpp-python) on the same GGUF, the same
prompt, greedy, in the same run, with the same number of CPU threads; and the bandwidth bound (the bytes of weights
a decode step reads over a measured copy bandwidth), so each figure also reads as a share of the memory limit.

Prints one table: decode tok/s (median of `--reps` runs of `-n` tokens, end of text ignored on both sides so each
decodes -n tokens; a repetition runs each contender once, in turn), prefill tok/s (a prompt of 81 tokens: prompt tokens / time to first token, which includes one
decode step), and the ratio. Our decode rate is timed after TinyJit's two warm-up steps (the first runs eagerly,
the second captures: scheduling and loading the kernels, ~0.13 s on the development box); llama.cpp's from its first
decoded token. The last column keeps the warm-up in ours. llama.cpp is skipped
with a note when llama_cpp does not import (python3 -m pip install llama-cpp-python; it compiles llama.cpp).

  python3 bench/llm.py --model "$(scripts/fetch-smollm2.sh)" [--llm build/examples/llm] [--threads 2] [--reps 3]
"""
import argparse
import os
import re
import statistics
import subprocess
import time

SHORT = "The capital of France is"
LONG = ("Tensors are the central data structure of deep learning frameworks. A tensor holds numbers in a grid of "
        "any number of dimensions, and the operations of a model (matrix products, convolutions, normalizations, "
        "activations) read tensors and write new ones. A compiler for such a framework fuses these operations into "
        "kernels so that the numbers stay in fast memory between them. Explain in two sentences why that helps:")


ISA = set()  # the CPU_ISA level our runs compiled for (examples/llm prints it)


def ours(llm, model, prompt, n, threads, extra):
  env = dict(os.environ, THREADS=str(threads))
  out = subprocess.run([llm, "--model", model, "--prompt", prompt, "-n", str(n), "--ignore-eos"] + extra, check=True,
                       capture_output=True, text=True, env=env).stderr  # (the figures go to stderr)
  m = re.search(r"prompt (\d+) tokens, time to first token ([\d.]+) s; \d+ tokens in [\d.]+ s: ([\d.]+) tok/s"
                r"(?:; ([\d.]+) tok/s after)?", out)
  p, ttft, whole = int(m.group(1)), float(m.group(2)), float(m.group(3))
  isa = re.search(r"CPU_ISA (.*)", out)
  if isa: ISA.add(isa.group(1))
  return p / ttft, float(m.group(4) or whole), whole


def theirs(model, prompt, n, threads):
  from llama_cpp import Llama
  llm = Llama(model_path=model, n_ctx=512, n_threads=threads, n_threads_batch=threads, verbose=False)
  add_bos = llm.metadata.get("tokenizer.ggml.add_bos_token", "false") == "true"
  ids = llm.tokenize(prompt.encode(), add_bos=add_bos, special=True)
  llm.reset()
  t0 = time.perf_counter()
  llm.eval(ids)
  prefill = len(ids) / (time.perf_counter() - t0)
  got, t1 = 0, time.perf_counter()
  for _ in llm.generate(ids, temp=0.0, top_k=1, reset=True):  # re-evaluates nothing: the prompt is cached
    got += 1
    if got == 1: t1 = time.perf_counter()  # the first token comes from the cached prompt's logits
    if got == n + 1: break
  return prefill, n / (time.perf_counter() - t1)


def weight_bytes(model):
  """The bytes of every tensor in the file: a decode step reads all of them (the tied head reads the embedding)."""
  data = open(model, "rb").read()
  import struct
  pos = 4 + 4
  n_tensors, n_kv = struct.unpack_from("<QQ", data, pos)
  pos += 16
  def string():
    nonlocal pos
    (k,) = struct.unpack_from("<Q", data, pos)
    pos += 8 + k
  sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
  def value(t):
    nonlocal pos
    if t == 8: string()
    elif t == 9:
      (et, cnt) = struct.unpack_from("<IQ", data, pos)
      pos += 12
      for _ in range(cnt): value(et)
    else: pos += sizes[t]
  for _ in range(n_kv):
    string()
    (t,) = struct.unpack_from("<I", data, pos)
    pos += 4
    value(t)
  blocks = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 8: (32, 34), 12: (256, 144), 14: (256, 210)}
  total = 0
  for _ in range(n_tensors):
    string()
    (nd,) = struct.unpack_from("<I", data, pos)
    pos += 4
    numel = 1
    for _ in range(nd):
      (d,) = struct.unpack_from("<Q", data, pos)
      pos += 8
      numel *= d
    (t,) = struct.unpack_from("<I", data, pos)
    pos += 4 + 8
    be, bb = blocks[t]
    total += numel // be * bb
  return total


def copy_bandwidth(nbytes=1 << 30):
  import numpy as np
  a = np.ones(nbytes // 4, dtype=np.float32)
  b = np.empty_like(a)
  ts = []
  for _ in range(5):
    t0 = time.perf_counter()
    np.copyto(b, a)
    ts.append(time.perf_counter() - t0)
  return 2 * nbytes / min(ts)  # read + write


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--model", required=True)
  ap.add_argument("--llm", default="build/examples/llm")
  ap.add_argument("--threads", type=int, default=2)
  ap.add_argument("--reps", type=int, default=5)
  ap.add_argument("-n", type=int, default=64)
  args = ap.parse_args()
  nbytes = weight_bytes(args.model)
  bw = copy_bandwidth()
  bound = bw / nbytes
  for extra in ([], ["--dtype", "float16"]):  # compile the kernels once (the compile cache keeps them)
    ours(args.llm, args.model, SHORT, 4, args.threads, extra)
    ours(args.llm, args.model, LONG, 4, args.threads, extra)
  # Each repetition runs every contender once, one after the other: this box's speed drifts by 20-30% over minutes,
  # and blocks of runs per contender would put the drift into the ratios.
  who = {"tinygrad.cpp": [], "tinygrad.cpp --dtype float16": ["--dtype", "float16"]}
  decode, prefill = {name: [] for name in list(who) + ["llama.cpp"]}, {name: [] for name in list(who) + ["llama.cpp"]}
  try:
    import llama_cpp  # noqa: F401
  except ImportError:
    print("llama.cpp: llama_cpp does not import (python3 -m pip install llama-cpp-python); its rows are left out")
    del decode["llama.cpp"], prefill["llama.cpp"]
  for _ in range(args.reps):
    for name, extra in who.items():
      decode[name].append(ours(args.llm, args.model, SHORT, args.n, args.threads, extra))
      prefill[name].append(ours(args.llm, args.model, LONG, 2, args.threads, extra)[0])
    if "llama.cpp" in decode:
      pre, dec = theirs(args.model, SHORT, args.n, args.threads)
      decode["llama.cpp"].append((pre, dec, dec))
      prefill["llama.cpp"].append(theirs(args.model, LONG, 1, args.threads)[0])
  rows = {name: (statistics.median(prefill[name]), statistics.median(r[1] for r in runs),
                 statistics.median(r[2] for r in runs)) for name, runs in decode.items()}
  print(f"model {os.path.basename(args.model)}: {nbytes / 1e6:.1f} MB of weights read per decoded token; copy "
        f"bandwidth {bw / 1e9:.1f} GB/s (numpy, 1 GiB) -> bound {bound:.0f} tok/s; threads {args.threads}; ours at CPU_ISA "
        f"{', '.join(sorted(ISA)) or '?'}")
  peer = rows.get("llama.cpp")
  print("| who | prefill tok/s | decode tok/s | decode vs llama.cpp | % of bound | decode with warm-up tok/s |")
  print("|---|---|---|---|---|---|")
  for name, (pre, dec, whole) in rows.items():
    ratio = f"{dec / peer[1]:.2f}x" if peer else "-"
    print(f"| {name} | {pre:.1f} | {dec:.1f} | {ratio} | {100 * dec / bound:.0f}% | {whole:.1f} |")


if __name__ == "__main__":
  main()
