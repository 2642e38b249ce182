// SharedLibrary: see shared_library.h.
#include "runtime/shared_library.h"

#include <dlfcn.h>

namespace tg {

std::optional<SharedLibrary> SharedLibrary::open(const std::vector<std::string>& names, std::string* why,
                                                 const Accept& accept) {
  std::string tried;
  for (const std::string& name : names) {
    std::string reason;
    if (void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      SharedLibrary lib(handle, name);
      if (!accept || accept(lib, &reason)) return lib;
      dlclose(handle);  // not the one wanted (another version): nothing of it was used
    } else {
      const char* e = dlerror();
      reason = e ? e : "unknown dlopen error";
    }
    tried += (tried.empty() ? "" : "; ") + (reason.find(name) == std::string::npos ? name + ": " : "") + reason;
  }
  *why = tried.empty() ? "no library name to try" : tried;
  return std::nullopt;
}

void* SharedLibrary::symbol(const char* name) const { return dlsym(handle_, name); }

}  // namespace tg
