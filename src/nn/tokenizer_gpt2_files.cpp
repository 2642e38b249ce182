// Tokenizer::from_gpt2_files: GPT-2's vocab.json and merges.txt read into the GGUF metadata keys from_gguf takes
// (tokenizer.ggml.*), so both sources build the one byte-level BPE (include/tg/tokenizer.h).
#include <fstream>
#include <sstream>

#include "nn/state/json.h"
#include "tg/error.h"
#include "tg/tokenizer.h"

namespace tg::nn {
namespace {

using state::GGUFValue;

std::string read_text(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("Tokenizer::from_gpt2_files: cannot open the " + std::string(what) + " " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

GGUFValue string_value(std::string s) { return {GGUFValue::Type::String, std::move(s)}; }
GGUFValue int_value(int64_t v) { return {GGUFValue::Type::Int32, v}; }
GGUFValue array_value(std::vector<GGUFValue> items) { return {GGUFValue::Type::Array, std::move(items)}; }

}  // namespace

Tokenizer Tokenizer::from_gpt2_files(const std::string& vocab_json, const std::string& merges_txt) {
  const state::Json vocab = state::parse_json(read_text(vocab_json, "vocabulary"), vocab_json);
  if (vocab.kind != state::Json::Kind::Object || vocab.members.empty())
    throw Error("Tokenizer::from_gpt2_files: " + vocab_json + " is not a JSON object of token -> id");
  std::vector<std::string> tokens(vocab.members.size());
  std::vector<bool> seen(tokens.size());
  for (const auto& [token, id] : vocab.members) {
    const std::optional<uint64_t> i = id.as_uint();
    if (!i || *i >= tokens.size() || seen[size_t(*i)])
      throw Error("Tokenizer::from_gpt2_files: " + vocab_json + ": token \"" + token + "\" has id " +
                  (id.text.empty() ? std::string("?") : id.text) + "; expected each of 0.." +
                  std::to_string(tokens.size() - 1) + " once");
    tokens[size_t(*i)] = token, seen[size_t(*i)] = true;
  }
  std::vector<GGUFValue> token_values, types, merges;
  const int32_t kNormal = 1, kControl = 3;
  int64_t end_of_text = -1;
  for (size_t i = 0; i < tokens.size(); i++) {
    if (tokens[i] == "<|endoftext|>") end_of_text = int64_t(i);
    types.push_back(int_value(tokens[i] == "<|endoftext|>" ? kControl : kNormal));
    token_values.push_back(string_value(tokens[i]));
  }
  std::istringstream lines(read_text(merges_txt, "merges file"));
  std::string line;
  for (size_t n = 1; std::getline(lines, line); n++) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (n == 1 && line.rfind("#version", 0) == 0)) continue;
    if (line.find(' ', 1) == std::string::npos)
      throw Error("Tokenizer::from_gpt2_files: " + merges_txt + " line " + std::to_string(n) + " \"" + line +
                  "\" is not two tokens separated by a space");
    merges.push_back(string_value(line));
  }
  state::GGUFFile f;
  f.kv.emplace("tokenizer.ggml.model", string_value("gpt2"));
  f.kv.emplace("tokenizer.ggml.pre", string_value("gpt2"));
  f.kv.emplace("tokenizer.ggml.tokens", array_value(std::move(token_values)));
  f.kv.emplace("tokenizer.ggml.token_type", array_value(std::move(types)));
  f.kv.emplace("tokenizer.ggml.merges", array_value(std::move(merges)));
  if (end_of_text >= 0) {
    f.kv.emplace("tokenizer.ggml.bos_token_id", int_value(end_of_text));
    f.kv.emplace("tokenizer.ggml.eos_token_id", int_value(end_of_text));
  }
  return from_gguf(f);
}

}  // namespace tg::nn
