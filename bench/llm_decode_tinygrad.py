#!/usr/bin/env python3
"""The upstream peer of bench/llm_decode: tinygrad's own example model code (examples/gpt2.py, extra/models/llama.py
of a tinygrad checkout) with the same shapes and random weights, greedy decoding of `steps` tokens after a 1-token
prompt through each model's TinyJit, tok/s after a warm-up run. Prints one line per shape in bench/llm_decode's words.

  python3 bench/llm_decode_tinygrad.py --tinygrad-repo PATH [gpt2|smollm2|tinyllama ...] [--steps 128]
"""
import argparse
import contextlib
import io
import os
import subprocess
import sys
import time

LLAMA_SHAPES = {  # bench/llm_decode_hf.py's shapes; extra/models/llama.py has no tied-embedding option: separate output
  "smollm2": dict(dim=576, n_layers=30, n_heads=9, n_kv_heads=3, hidden_dim=1536, vocab_size=49152),
  "tinyllama": dict(dim=2048, n_layers=22, n_heads=32, n_kv_heads=4, hidden_dim=5632, vocab_size=32000),
}


class StubTokenizer:  # GPT2.generate encodes the prompt and decodes its output: a fixed 1-token prompt, no text
  def encode(self, s, **_): return [1]
  def decode(self, toks): return ""


def gpt2_runner(steps):
  from examples.gpt2 import GPT2, MODEL_PARAMS, Transformer  # after MAX_CONTEXT is set, it is read at import
  gpt2 = GPT2(Transformer(**MODEL_PARAMS["gpt2"]), StubTokenizer())  # nn.Linear/Embedding random init, fp32
  def run():
    # generate's trange draws a progress bar on stderr each step: keep it off the output
    with contextlib.redirect_stderr(io.StringIO()):
      gpt2.generate("", max_length=steps, temperature=0)
  return run, "float32"


def llama_runner(shape, steps, layers):
  from tinygrad import Tensor
  from tinygrad.nn.state import get_state_dict, load_state_dict
  from extra.models.llama import Transformer
  params = dict(LLAMA_SHAPES[shape], **({"n_layers": layers} if layers else {}))
  model = Transformer(**params, norm_eps=1e-5, rope_theta=10000, max_context=max(512, steps + 1), jit=True)
  # examples/llama.py loads float16 weights with load_state_dict(strict=False): do the same with the random init
  # cast to half (freqs_cis is not a weight there, so it stays float32 and forward casts it to h's dtype)
  weights = {k: v.half() for k, v in get_state_dict(model).items() if k != "freqs_cis"}
  load_state_dict(model, weights, strict=False, consume=True, verbose=False)
  def run():
    # examples/llama.py's loop: the first token goes through forward, the rest through forward_jit (the model binds
    # start_pos itself), feeding the returned token tensor back and reading it with .item() each step
    tok_tensor = None
    for start_pos in range(steps):
      next_tok = Tensor([[1]]) if tok_tensor is None else tok_tensor.reshape(1, 1)
      tok_tensor = model(next_tok, start_pos, 0.0)
      tok_tensor.item()
  return run, "float16"


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("shapes", nargs="*", default=["smollm2", "tinyllama", "gpt2"])
  ap.add_argument("--steps", type=int, default=128)
  ap.add_argument("--tinygrad-repo", required=True)
  ap.add_argument("--layers", type=int, default=0, help=argparse.SUPPRESS)  # llama layer override for quick tests
  args = ap.parse_args()
  # examples/gpt2.py reads MAX_CONTEXT at import; 512 like bench/llm_decode, more if the steps need it
  os.environ["MAX_CONTEXT"] = str(max(512, args.steps + 1))
  sys.path.insert(0, os.path.abspath(args.tinygrad_repo))  # for `examples.gpt2` and `extra.models.llama`
  from tinygrad import Device, Tensor
  try:
    from importlib.metadata import version
    tg_version = version("tinygrad")
  except Exception:
    tg_version = "unknown"
  # (the commit only when PATH is the top of a checkout: a copy of the files inside another repository is not one)
  git = lambda *a: subprocess.run(["git", "-C", args.tinygrad_repo, *a], capture_output=True, text=True).stdout.strip()
  top = git("rev-parse", "--show-toplevel")
  commit = git("rev-parse", "HEAD") if top and os.path.samefile(top, args.tinygrad_repo) else "unknown"
  print(f"tinygrad {tg_version}, repo commit {commit}")
  Tensor.manual_seed(0)
  for shape in args.shapes:
    run, dtype = gpt2_runner(args.steps) if shape == "gpt2" else llama_runner(shape, args.steps, args.layers)
    run()  # warm-up: compiles the kernels and captures the JIT
    t0 = time.perf_counter()
    run()
    rate = args.steps / (time.perf_counter() - t0)
    print(f"{shape} upstream-tinygrad {dtype} on {Device.DEFAULT}: {rate:.1f} tok/s ({args.steps} tokens)", flush=True)


if __name__ == "__main__":
  main()
