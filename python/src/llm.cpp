// tinygrad_cpp.llm: the library's language models and tokenizer (include/tg/llama.h, gpt2.h, tokenizer.h), so a
// Python program generates text with the same C++ model code as examples/llm. Positions and tokens are ints or
// BoundVariables (one compiled step for every position, as tinygrad's jitted decode).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <random>

#include "bindings.h"
#include "tg/gpt2.h"
#include "tg/llama.h"
#include "tg/state.h"
#include "tg/tokenizer.h"

namespace tgpy {

void bind_llm(nb::module_& m) {
  using tg::nn::GPT2;
  using tg::nn::Llama;
  nb::class_<Llama>(m, "Llama")
      .def_static(
          "from_gguf",
          [](const std::string& path, nb::handle device, int64_t max_context, nb::handle dtype,
             std::optional<bool> keep_blocks) {
            return Llama::from_gguf(path, device_arg(device), max_context,
                                    dtype_arg(dtype).value_or(tg::dtypes::float32), keep_blocks);
          },
          nb::arg("path"), nb::arg("device").none() = nb::none(), nb::arg("max_context") = 0,
          nb::arg("dtype").none() = nb::none(), nb::arg("keep_blocks").none() = nb::none())
      .def("forward", &Llama::forward, nb::arg("tokens"), nb::arg("start_pos"))
      .def("__call__", &Llama::forward, nb::arg("tokens"), nb::arg("start_pos"))
      .def("forward_token", &Llama::forward_token, nb::arg("token"), nb::arg("start_pos"))
      .def_prop_ro("dim", [](const Llama& l) { return l.config.dim; })
      .def_prop_ro("n_layers", [](const Llama& l) { return l.config.n_layers; })
      .def_prop_ro("n_heads", [](const Llama& l) { return l.config.n_heads; })
      .def_prop_ro("n_kv_heads", [](const Llama& l) { return l.config.n_kv_heads; })
      .def_prop_ro("vocab_size", [](const Llama& l) { return l.config.vocab_size; })
      .def_prop_ro("max_context", [](const Llama& l) { return l.config.max_context; });

  nb::class_<GPT2>(m, "GPT2")
      .def(
          "__init__",
          [](GPT2* self, int64_t vocab_size, int64_t max_context, int64_t dim, int64_t n_layers, int64_t n_heads) {
            tg::nn::GPT2Config c;
            c.vocab_size = vocab_size, c.max_context = max_context, c.dim = dim, c.n_layers = n_layers,
            c.n_heads = n_heads;
            new (self) GPT2(c);
          },
          nb::arg("vocab_size") = 50257, nb::arg("max_context") = 1024, nb::arg("dim") = 768,
          nb::arg("n_layers") = 12, nb::arg("n_heads") = 12)
      .def_static(
          "from_safetensors",
          [](const std::string& path, nb::handle device, int64_t max_context) {
            return GPT2::from_safetensors(path, device_arg(device), max_context);
          },
          nb::arg("path"), nb::arg("device").none() = nb::none(), nb::arg("max_context") = 0)
      .def("forward", &GPT2::forward, nb::arg("tokens"), nb::arg("start_pos"))
      .def("__call__", &GPT2::forward, nb::arg("tokens"), nb::arg("start_pos"))
      .def("forward_token", &GPT2::forward_token, nb::arg("token"), nb::arg("start_pos"))
      .def_prop_ro("vocab_size", [](const GPT2& g) { return g.config.vocab_size; })
      .def_prop_ro("max_context", [](const GPT2& g) { return g.config.max_context; });

  using tg::nn::Tokenizer;
  nb::class_<Tokenizer>(m, "Tokenizer")
      .def_static(
          "from_gguf", [](const std::string& path) { return Tokenizer::from_gguf(tg::nn::state::gguf_load(path)); },
          nb::arg("path"))
      .def_static("from_gpt2_files", &Tokenizer::from_gpt2_files, nb::arg("vocab_json"), nb::arg("merges_txt"))
      .def("encode", &Tokenizer::encode, nb::arg("text"), nb::arg("add_bos") = false, nb::arg("parse_special") = true)
      .def("decode", &Tokenizer::decode, nb::arg("ids"))
      .def_prop_ro("bos_id", &Tokenizer::bos_id)
      .def_prop_ro("eos_id", &Tokenizer::eos_id)
      .def_prop_ro("add_bos", &Tokenizer::add_bos)
      .def_prop_ro("chat_template", &Tokenizer::chat_template)
      .def_prop_ro("vocab_size", &Tokenizer::vocab_size);

  m.def(
      "sample_token",
      [](const std::vector<float>& logits, double temperature, int64_t top_k, double top_p, uint64_t seed) {
        std::mt19937_64 rng(seed);
        return tg::nn::sample_token(logits, {temperature, top_k, top_p}, rng);
      },
      nb::arg("logits"), nb::arg("temperature") = 0.0, nb::arg("top_k") = 0, nb::arg("top_p") = 1.0,
      nb::arg("seed") = 0);
}

}  // namespace tgpy
