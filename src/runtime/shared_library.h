#pragma once
// A vendor library opened at run time (dlopen), for the runtimes that load theirs only when first used: CUDA's
// driver and NVRTC, the OpenCL ICD loader, libLLVM, NCCL. The first candidate name that opens, and its entry
// points bound by name into the runtime's table of function pointers. Libraries stay loaded until the process
// exits: unloading a driver's library mid-process is never worth the risk.
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace tg {

class SharedLibrary {
 public:
  // Whether an opened candidate is the library wanted (libLLVM checks its major version); false with *why set
  // closes it and tries the next name.
  using Accept = std::function<bool(const SharedLibrary&, std::string* why)>;

  // The first of `names` that opens (and that `accept`, if given, takes); nullopt with *why naming every name
  // tried and why it did not open ("libcuda.so.1: cannot open shared object file ...").
  static std::optional<SharedLibrary> open(const std::vector<std::string>& names, std::string* why,
                                           const Accept& accept = {});

  const std::string& name() const { return name_; }  // the name it was opened by
  void* symbol(const char* name) const;               // nullptr when the library does not export it

  // Binds fn to the first of `names` the library exports (a versioned entry point first, its old name after);
  // false when it exports none, with *missing set to the first name unless an earlier bind set it (binds that go
  // on after a failure still name the first entry point missing).
  template <class Fn>
  bool bind(Fn& fn, std::initializer_list<const char*> names, std::string* missing) const {
    for (const char* n : names)
      if (void* p = symbol(n)) {
        fn = reinterpret_cast<Fn>(p);
        return true;
      }
    if (missing->empty()) *missing = *names.begin();
    return false;
  }
  template <class Fn>
  bool bind(Fn& fn, const char* name, std::string* missing) const {
    return bind(fn, {name}, missing);
  }

 private:
  SharedLibrary(void* handle, std::string name) : handle_(handle), name_(std::move(name)) {}
  void* handle_;
  std::string name_;
};

}  // namespace tg
