#!/usr/bin/env python3
"""The peer of bench/llm_decode: Hugging Face transformers with torch, the same shapes with random weights, greedy
decoding of `steps` tokens after a 1-token prompt (model.generate, its default dynamic KV cache), tok/s after a
warm-up run. Prints one line per shape in bench/llm_decode's words.

  python3 bench/llm_decode_hf.py [smollm2|tinyllama|gpt2 ...] [--steps 128] [--device cuda]
"""
import argparse
import time

import torch


def model_of(shape):
  import transformers as tf
  if shape == "gpt2":
    return tf.GPT2LMHeadModel(tf.GPT2Config(n_positions=1024)), torch.float32
  if shape == "tinyllama":
    cfg = tf.LlamaConfig(hidden_size=2048, num_hidden_layers=22, num_attention_heads=32, num_key_value_heads=4,
                         intermediate_size=5632, vocab_size=32000, max_position_embeddings=2048)
  else:
    cfg = tf.LlamaConfig(hidden_size=576, num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
                         intermediate_size=1536, vocab_size=49152, max_position_embeddings=2048,
                         tie_word_embeddings=True)
  return tf.LlamaForCausalLM(cfg), torch.float16


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("shapes", nargs="*", default=["smollm2", "tinyllama", "gpt2"])
  ap.add_argument("--steps", type=int, default=128)
  ap.add_argument("--device", default="cuda")
  args = ap.parse_args()
  torch.manual_seed(0)
  for shape in args.shapes:
    model, dtype = model_of(shape)
    model = model.to(args.device, dtype).eval()
    prompt = torch.ones((1, 1), dtype=torch.long, device=args.device)
    def run():
      with torch.no_grad():
        model.generate(prompt, max_new_tokens=args.steps, min_new_tokens=args.steps, do_sample=False,
                       pad_token_id=0)
      if args.device == "cuda": torch.cuda.synchronize()
    run()
    t0 = time.perf_counter()
    run()
    rate = args.steps / (time.perf_counter() - t0)
    print(f"{shape} hf-transformers {str(dtype).replace('torch.', '')} on {args.device}: {rate:.1f} tok/s "
          f"({args.steps} tokens)")


if __name__ == "__main__":
  main()
