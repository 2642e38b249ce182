#!/usr/bin/env python3
"""Checks examples/llm against llama.cpp (PyPI's llama-cpp-python, built from source by pip) on the same GGUF:
the prompt's token ids, the first position's 5 largest logits, and the greedy tokens. Prints each side and where
they differ; exits 1 when the prompt ids or the first greedy token differ, or the first logits differ by more
than --logit-tol (llama.cpp multiplies 4-bit weight blocks with 8-bit-quantized activations, we dequantize the
weights to float32 at load: the later tokens of a long greedy run may part ways on a near tie).

  python3 -m pip install llama-cpp-python          # compiles llama.cpp (several minutes on 2 cores)
  python3 scripts/llm-vs-llamacpp.py --model "$(scripts/fetch-smollm2.sh)" [--llm build/examples/llm] [-n 32]
"""
import argparse
import re
import subprocess
import sys


def ours(llm, model, prompt, n):
  out = subprocess.run([llm, "--model", model, "--prompt", prompt, "-n", str(n), "--ids"], check=True,
                       capture_output=True, text=True).stdout
  ids = lambda key: [int(t) for t in re.search(rf"^{key}:(.*)$", out, re.M).group(1).split()]
  top = [(int(a), float(b)) for a, b in re.findall(r"(\d+):(-?[\d.]+)", re.search(r"^first logits top5:(.*)$", out, re.M).group(1))]
  return ids("prompt ids"), ids("generated ids"), top


def theirs(model, prompt, n):
  from llama_cpp import Llama
  llm = Llama(model_path=model, n_ctx=256, n_threads=2, logits_all=True, verbose=False)
  add_bos = llm.metadata.get("tokenizer.ggml.add_bos_token", "false") == "true"
  ids = llm.tokenize(prompt.encode(), add_bos=add_bos, special=True)
  llm.eval(ids)
  first = llm.scores[len(ids) - 1]
  top = sorted(range(len(first)), key=lambda i: -first[i])[:5]
  gen = []
  eos = llm.token_eos()
  for t in llm.generate(ids, temp=0.0, top_k=1, reset=True):
    if t == eos or len(gen) == n: break
    gen.append(t)
  return ids, gen, [(i, float(first[i])) for i in top]


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--model", required=True)
  ap.add_argument("--llm", default="build/examples/llm")
  ap.add_argument("--prompt", default="The capital of France is")
  ap.add_argument("-n", type=int, default=32)
  ap.add_argument("--logit-tol", type=float, default=0.5)
  a = ap.parse_args()
  p0, g0, t0 = ours(a.llm, a.model, a.prompt, a.n)
  p1, g1, t1 = theirs(a.model, a.prompt, a.n)
  print("prompt ids  ours", p0, "\n            llama.cpp", p1)
  print("top5 logits ours", t0, "\n            llama.cpp", t1)
  print("greedy      ours", g0, "\n            llama.cpp", g1)
  same = next((i for i, (x, y) in enumerate(zip(g0, g1)) if x != y), min(len(g0), len(g1)))
  print(f"greedy tokens equal for the first {same} of {min(len(g0), len(g1))}")
  ok = p0 == p1 and g0[:1] == g1[:1] and t0[0][0] == t1[0][0]
  theirs_by_id = dict(t1)
  worst = max((abs(v - theirs_by_id[i]) for i, v in t0 if i in theirs_by_id), default=0.0)
  print(f"largest difference among shared top-5 logits: {worst:.4f}")
  ok = ok and worst <= a.logit_tol
  print("OK" if ok else "MISMATCH")
  sys.exit(0 if ok else 1)


if __name__ == "__main__":
  main()
