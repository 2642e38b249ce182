#pragma once
// The loaders over bytes already in memory: the public functions of tg/state.h map the file and call
// these; tests call them on exact-size heap copies (so AddressSanitizer sees any read past the end).
#include <map>
#include <memory>
#include <string>

#include "nn/state/file_bytes.h"
#include "tg/state.h"

namespace tg::nn::state {

SafetensorsHeader safe_parse_header(const FileBytes& f, const char* who);
std::map<std::string, Tensor> safe_load_bytes(const std::shared_ptr<const FileBytes>& f, const std::string& device);
std::map<std::string, Tensor> torch_load_bytes(const std::shared_ptr<const FileBytes>& f, const std::string& device);
GGUFFile gguf_load_bytes(const std::shared_ptr<const FileBytes>& f, const std::string& device);

}  // namespace tg::nn::state
