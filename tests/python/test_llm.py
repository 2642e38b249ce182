"""tinygrad_cpp.llm: the C++ models and tokenizer from Python. GPT-2 with random weights (a decode step at a bound
position against the prefill of the same tokens), the sampler, and SmolLM2 end to end when scripts/run-tests.sh
fetched it (TG_SMOLLM2_GGUF)."""
import os

import numpy as np
import pytest
from tinygrad_cpp import Tensor, Variable, dtypes
from tinygrad_cpp.llm import GPT2, Llama, Tokenizer, sample_token


def _gpt2(seed):
  Tensor.manual_seed(seed)
  return GPT2(vocab_size=40, max_context=16, dim=16, n_layers=2, n_heads=4)


def test_gpt2_decode_step_matches_the_prefill():
  tokens = [3, 17, 5, 39, 0]
  whole, stepped = _gpt2(1), _gpt2(1)  # the same random weights, separate KV caches
  want = whole(Tensor([tokens], dtype=dtypes.int32), 0).numpy()
  stepped(Tensor([tokens[:-1]], dtype=dtypes.int32), 0).realize()
  got = stepped.forward_token(Variable("token", 0, 39).bind(tokens[-1]), Variable("start_pos", 0, 15).bind(4)).numpy()
  assert got.shape == (1, 40)
  np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-4)


def test_bad_inputs_raise():
  m = _gpt2(2)
  with pytest.raises(RuntimeError, match="outside the vocabulary"): m.forward_token(40, 0)
  with pytest.raises(RuntimeError, match="outside the context"): m(Tensor([[1] * 17], dtype=dtypes.int32), 0)
  with pytest.raises(RuntimeError, match="inconsistent sizes"): GPT2(dim=16, n_heads=3)
  with pytest.raises(RuntimeError, match="cannot open"): Llama.from_gguf("/nonexistent.gguf")


def test_sample_token():
  logits = [0.1, 2.5, -1.0, 2.4]
  assert sample_token(logits) == 1
  assert sample_token(logits, temperature=0.8, top_k=1, seed=7) == 1
  assert {sample_token(logits, temperature=1.0, top_k=2, seed=s) for s in range(64)} == {1, 3}


@pytest.mark.skipif(not os.path.isfile(os.environ.get("TG_SMOLLM2_GGUF", "")),
                    reason="TG_SMOLLM2_GGUF names no file (scripts/fetch-smollm2.sh fetches SmolLM2)")
def test_smollm2_completes_a_prompt():
  path = os.environ["TG_SMOLLM2_GGUF"]
  tok = Tokenizer.from_gguf(path)
  ids = tok.encode("The capital of France is", add_bos=tok.add_bos)
  assert ids == [504, 3575, 282, 4649, 314]
  model = Llama.from_gguf(path, max_context=32)
  assert (model.dim, model.n_layers, model.vocab_size) == (576, 30, 49152)
  out = []
  logits = model(Tensor([ids], dtype=dtypes.int32), 0)
  token, pos = Variable("token", 0, model.vocab_size - 1), Variable("start_pos", 1, 31)
  for p in range(len(ids), len(ids) + 3):
    out.append(sample_token(logits.tolist()[0]))
    logits = model.forward_token(token.bind(out[-1]), pos.bind(p))
  assert out == [7042, 30, 198]
  assert tok.decode(out) == " Paris.\n"
