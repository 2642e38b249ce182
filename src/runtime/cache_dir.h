#pragma once
// The folder of the on-disk caches (compiled kernels, BEAM winners): CACHEDB_DIR, else $XDG_CACHE_HOME/tinygrad_cpp,
// else ~/.cache/tinygrad_cpp, else <tmp>/tinygrad_cpp. Read on every call (not once), so tests and long-lived
// processes can point it elsewhere.
#include <filesystem>

namespace tg {

std::filesystem::path cache_dir();

}  // namespace tg
