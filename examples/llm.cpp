// Text generation with a LLaMA-architecture GGUF model (tinygrad's examples/llama.py, llama.cpp's llama-cli):
//
//   llm --model SmolLM2-135M-Instruct.Q4_1.gguf --prompt "The capital of France is" -n 32
//   llm --model ... --prompt "What is a tensor?" --chat --temperature 0.7 --top-k 40 --top-p 0.9 --seed 1
//
// Streams the tokens as they come, then prints the time to the first token and the decode speed. --prompt is
// completed as given (with a BOS token first when the model asks for one); --chat wraps it in the model's chat
// template (ChatML and Llama 3's are understood); --temperature 0 (the default) is greedy. DEV picks the device.
// On the CPU, Q4_0, Q4_1 and Q8_0 matrices stay in their blocks, dequantized inside the matmuls
// (tg/block_weight.h); --dequantize dequantizes every weight at load instead (the default on GPUs). --dtype float16 computes the activations (and keeps
// dequantized weights) in half precision. --ids also prints the prompt's and the generated token
// ids and the first position's 5 largest logits (scripts/llm-vs-llamacpp.py compares them with llama.cpp's).
#include <tg/llama.h>
#include <tg/tg.h>
#include <tg/tokenizer.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Args {
  std::string model, prompt = "The meaning of life is";
  bool chat = false, print_ids = false;
  int64_t n = 64, max_context = 0;
  std::string dtype = "float32";
  bool dequantize = false;
  bool ignore_eos = false;  // decode exactly -n tokens (benchmarks), as llama.cpp's --ignore-eos
  uint64_t seed = 0;
  tg::nn::SamplerConfig sampler;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "llm: %s\nusage: llm --model PATH.gguf [--prompt TEXT] [--chat] [-n TOKENS] [--temperature T] "
               "[--top-k K] [--top-p P] [--seed S] [--context N] [--dtype float32|float16] [--dequantize] "
               "[--ignore-eos] [--ids]\n",
               why);
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; i++) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + k).c_str());
      return argv[++i];
    };
    try {
      if (k == "--model")
        a.model = value();
      else if (k == "--prompt")
        a.prompt = value();
      else if (k == "--chat")
        a.chat = true;
      else if (k == "--ids")
        a.print_ids = true;
      else if (k == "-n")
        a.n = std::stoll(value());
      else if (k == "--temperature")
        a.sampler.temperature = std::stod(value());
      else if (k == "--top-k")
        a.sampler.top_k = std::stoll(value());
      else if (k == "--top-p")
        a.sampler.top_p = std::stod(value());
      else if (k == "--seed")
        a.seed = std::stoull(value());
      else if (k == "--dequantize")
        a.dequantize = true;
      else if (k == "--ignore-eos")
        a.ignore_eos = true;
      else if (k == "--dtype")
        a.dtype = value();
      else if (k == "--context")
        a.max_context = std::stoll(value());
      else
        usage(("unknown argument " + k).c_str());
    } catch (const std::logic_error&) {
      usage(("bad value for " + k).c_str());
    }
  }
  if (a.model.empty()) usage("--model is required");
  return a;
}

// The prompt in the model's chat template, for the templates of the common families (no Jinja interpreter).
std::string chat_prompt(const tg::nn::Tokenizer& tok, const std::string& user) {
  const std::string& t = tok.chat_template();
  if (t.find("<|im_start|>") != std::string::npos)
    return "<|im_start|>user\n" + user + "<|im_end|>\n<|im_start|>assistant\n";
  if (t.find("<|start_header_id|>") != std::string::npos)
    return "<|start_header_id|>user<|end_header_id|>\n\n" + user +
           "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n";
  throw tg::Error("llm: --chat: the model's chat template is not one this example knows (ChatML, Llama 3)");
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  try {
    auto t_load = std::chrono::steady_clock::now();
    const tg::nn::state::GGUFFile file = tg::nn::state::gguf_load(args.model);
    const tg::nn::Tokenizer tok = tg::nn::Tokenizer::from_gguf(file);
    tg::nn::Llama model = tg::nn::Llama::from_gguf(args.model, "", args.max_context, tg::dtypes::from_name(args.dtype),
                                                   args.dequantize ? std::optional<bool>(false) : std::nullopt);
    std::fprintf(stderr, "loaded %lld layers, dim %lld, vocab %lld in %.2f s\n",
                 static_cast<long long>(model.config.n_layers), static_cast<long long>(model.config.dim),
                 static_cast<long long>(model.config.vocab_size), seconds_since(t_load));
    const std::string device = tg::default_device();
    if (device.rfind("CPU", 0) == 0 || device.rfind("LLVM", 0) == 0)
      std::fprintf(stderr, "device %s, CPU_ISA %s\n", device.c_str(), tg::cpu_isa_description().c_str());

    const std::string text = args.chat ? chat_prompt(tok, args.prompt) : args.prompt;
    std::vector<int32_t> ids = tok.encode(text, tok.add_bos());
    const int64_t room = model.config.max_context - int64_t(ids.size());
    if (ids.empty() || room <= 0) throw tg::Error("llm: the prompt has " + std::to_string(ids.size()) + " tokens");
    const std::optional<int32_t> im_end = tok.token_id("<|im_end|>"), eot = tok.token_id("<|eot_id|>");
    auto stops = [&](int32_t t) { return !args.ignore_eos && (t == tok.eos_id() || t == im_end || t == eot); };

    std::mt19937_64 rng(args.seed);
    if (!args.chat) std::fputs(args.prompt.c_str(), stdout);
    auto t0 = std::chrono::steady_clock::now();
    const int64_t n0 = int64_t(ids.size());
    tg::Tensor prompt(ids, {1, n0});
    const std::vector<float> first = model.forward(prompt, 0).tolist<float>();
    int32_t next = tg::nn::sample_token(first, args.sampler, rng);
    const double ttft = seconds_since(t0);

    // Decode: one token at a time at a symbolic position, so one set of kernels (and TinyJit's replay) serves all.
    // The token is a bound variable too: its embedding is one row read where it says.
    tg::Variable pos("start_pos", 1, model.config.max_context - 1), token("token", 0, model.config.vocab_size - 1);
    tg::TinyJit step([&](const std::vector<tg::Tensor>& in) {
      return std::vector<tg::Tensor>{model.forward_token(*in[0].bound_variable(), *in[1].bound_variable())};
    });
    std::vector<int32_t> out;
    int64_t generated = 0, steps = 0;
    auto t_decode = std::chrono::steady_clock::now();
    // TinyJit runs the first step eagerly and captures the second (scheduling and loading the kernels); the
    // steady rate is timed from the end of the second step.
    constexpr int64_t kWarmupSteps = 2;
    auto t_steady = t_decode;
    for (int64_t p = n0; generated < args.n && !stops(next); p++) {
      const std::string piece = tok.token_bytes(next);
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      out.push_back(next);
      std::fflush(stdout);
      generated++;
      if (generated == args.n || p >= model.config.max_context) break;
      const std::vector<tg::Tensor> in = {tg::Tensor(token.bind(next)), tg::Tensor(pos.bind(p))};
      next = tg::nn::sample_token(step(in)[0].tolist<float>(), args.sampler, rng);
      if (++steps == kWarmupSteps) t_steady = std::chrono::steady_clock::now();
    }
    const double decode_s = seconds_since(t_decode), steady_s = seconds_since(t_steady);
    std::printf("\n");
    if (args.print_ids) {
      auto line = [](const char* what, const std::vector<int32_t>& v) {
        std::printf("%s", what);
        for (int32_t t : v) std::printf(" %d", t);
        std::printf("\n");
      };
      line("prompt ids:", ids);
      line("generated ids:", out);
      std::vector<int32_t> order(first.size());
      for (size_t i = 0; i < order.size(); i++) order[i] = int32_t(i);
      std::partial_sort(order.begin(), order.begin() + 5, order.end(),
                        [&](int32_t a, int32_t b) { return first[size_t(a)] > first[size_t(b)]; });
      std::printf("first logits top5:");
      for (size_t i = 0; i < 5 && i < order.size(); i++) std::printf(" %d:%.4f", order[i], first[size_t(order[i])]);
      std::printf("\n");
    }
    std::fflush(stdout);
    std::fprintf(stderr, "prompt %lld tokens, time to first token %.3f s; %lld tokens in %.3f s: %.1f tok/s",
                 static_cast<long long>(n0), ttft, static_cast<long long>(generated), decode_s,
                 generated > 1 ? double(generated - 1) / decode_s : 0.0);
    if (steps > kWarmupSteps)
      std::fprintf(stderr, "; %.1f tok/s after the JIT's %lld warm-up steps", double(steps - kWarmupSteps) / steady_s,
                   static_cast<long long>(kWarmupSteps));
    std::fprintf(stderr, "\n");
  } catch (const tg::Error& e) {
    std::fprintf(stderr, "llm: %s\n", e.what());
    return 1;
  }
}
