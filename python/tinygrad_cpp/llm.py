"""Language models with the C++ library's model code (tg::nn::Llama, GPT2, Tokenizer), as examples/llm runs them.

  from tinygrad_cpp.llm import Llama, Tokenizer, sample_token
  tok = Tokenizer.from_gguf(path)
  model = Llama.from_gguf(path, max_context=256)
  ids = tok.encode("The capital of France is", add_bos=tok.add_bos)
  logits = model(Tensor([ids], dtype=dtypes.int32), 0)        # (1, vocab) float32, the last position's
  next_id = sample_token(logits.tolist()[0])                   # greedy; temperature=, top_k=, top_p=, seed=
  logits = model.forward_token(Variable("token", 0, model.vocab_size - 1).bind(next_id),
                               Variable("start_pos", 1, 255).bind(len(ids)))  # one compiled step for every position
"""
from tinygrad_cpp._C import GPT2, Llama, Tokenizer, sample_token

__all__ = ["GPT2", "Llama", "Tokenizer", "sample_token"]
