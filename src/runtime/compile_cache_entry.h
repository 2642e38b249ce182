#pragma once
// One entry file of the on-disk compile cache (compile_cache.cpp): the compiler key, the kernel source and
// the binary, with the binary's checksum. Entries are read back from disk, so decoding treats them as
// untrusted bytes (tests/fuzz/fuzz_compile_cache.cpp fuzzes it).
#include <string>

namespace tg {

std::string encode_cache_entry(const std::string& key, const std::string& src, const std::string& bin);
// The binary stored in `file` if the file is whole and was written for exactly this key and source.
bool decode_cache_entry(const std::string& file, const std::string& key, const std::string& src, std::string* bin);

}  // namespace tg
