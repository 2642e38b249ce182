// The device registry: names -> devices, each opened once per process, on first use, and kept until exit.
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <map>
#include <mutex>
#include <utility>

#include "helpers/env.h"
#include "renderer/cpu_isa.h"
#include "runtime/devices.h"
#include "runtime/nvrtc.h"
#include "tg/context.h"
#include "tg/error.h"
#include "uop/device_set.h"

namespace tg {
namespace {

struct KnownDevice {
  const char* name;
  std::unique_ptr<Device> (*make)(int index);
  // How many instances this machine has (the reason in *why when none); nullptr: exactly one.
  int (*instances)(std::string* why);
  // DLPack's device type of its buffers' memory (SharedMemory); 0: memory nobody else may touch.
  int dlpack_type;
};
// Order matters for the error message, and the first device of a DLPack type is the one device_for_memory picks.
constexpr int kPrivate = 0, kDLCPU = 1, kDLCUDA = 2;
const KnownDevice kKnown[] = {{"CPU", make_cpu_device, [](std::string*) { return kCpuInstances; }, kDLCPU},
                              {"LLVM", make_llvm_device, llvm_device_count, kDLCPU},
                              {"CUDA", make_cuda_device, cuda_device_count, kDLCUDA},
                              // Private: its buffers are cl_mem handles, not addresses, so neither the memory
                              // planner (which offsets raw pointers) nor DLPack may treat them as memory.
                              {"CL", make_cl_device, cl_device_count, kPrivate},
                              {"INTERP", [](int) { return make_interp_device(); }, nullptr, kPrivate},
                              {"NULL", [](int) { return make_null_device(); }, nullptr, kPrivate},
                              {"HOST", [](int) { return make_host_device(); }, nullptr, kDLCPU}};

std::string known_list() {
  std::string s;
  for (const auto& k : kKnown) s += (s.empty() ? "" : ", ") + std::string(k.name);
  return s;
}

const KnownDevice* find_known(const std::string& base) {
  for (const auto& k : kKnown)
    if (base == k.name) return &k;
  return nullptr;
}

// "CUDA:1" -> {"CUDA", 1}; a name without ":N" is instance 0. The name is already upper case.
std::pair<std::string, int> split_index(const std::string& name, const std::string& asked) {
  size_t colon = name.find(':');
  if (colon == std::string::npos) return {name, 0};
  std::string base = name.substr(0, colon), index = name.substr(colon + 1);
  bool digits = !index.empty() && index.size() <= 4;
  for (char c : index) digits = digits && c >= '0' && c <= '9';
  if (!digits) throw Error("device '" + asked + "': expected " + base + " or " + base + ":N with N a small number");
  return {base, std::stoi(index)};
}

// Devices live until exit on purpose: buffers and programs held by static objects may be released during
// static destruction, after a normal registry would already be gone.
struct Registry {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<Device>> open;
};
Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

}  // namespace

// "(cpu:0, CUDA:1)" -> "(CPU, CUDA:1)": each member canonical, at least one, none twice.
std::string canonical_device_set(const std::string& name) {
  std::vector<std::string> members = device_set_members(name);
  for (std::string& m : members) {
    if (m.empty() || is_device_set(m)) throw Error("device set '" + name + "': expected (DEV, DEV, ...) of device names");
    m = canonical_device(m);
  }
  for (size_t i = 0; i < members.size(); i++)
    for (size_t j = 0; j < i; j++)
      if (members[i] == members[j]) throw Error("device set '" + name + "' names " + members[i] + " twice");
  return device_set_name(members);
}

std::string canonical_device(const std::string& name) {
  if (is_device_set(name)) return canonical_device_set(name);
  std::string up;
  for (char c : name) up += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::string base = up.substr(0, up.find(':'));
  const KnownDevice* known = find_known(base);
  if (!known) throw Error("unknown device '" + name + "' (known devices: " + known_list() + ")");
  int index = split_index(up, name).second;
  if (index == 0) return base;  // instance 0 is spelled without its index, as in tinygrad
  if (!known->instances)
    throw Error("device '" + name + "': " + base + " has only one instance (use " + base + " or " + base + ":0)");
  std::string why;
  int n = known->instances(&why);
  if (index >= n)
    throw Error("device '" + name + "': this machine has " + std::to_string(n) + " " + base + " device" +
                (n == 1 ? "" : "s") +
                (n == 0 ? " (" + why + ")" : " (" + base + ":0 to " + base + ":" + std::to_string(n - 1) + ")"));
  return base + ":" + std::to_string(index);
}

std::pair<std::string, int> device_kind(const std::string& canonical) { return split_index(canonical, canonical); }

Device& get_device(const std::string& name) {
  std::string canon = canonical_device(name);
  if (is_device_set(canon))
    throw Error("device " + canon + " is a set of devices (a sharded tensor's): it has no one memory or compiler");
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.open.find(canon);
  if (it != r.open.end()) return *it->second;
  auto [base, index] = split_index(canon, name);
  std::unique_ptr<Device> dev = find_known(base)->make(index);  // throws when the device cannot open here
  if (!dev) throw Error("device " + canon + " could not be opened");
  dev->shared_memory_ = shared_memory_of(canon);
  if (DEBUG >= 1) std::fprintf(stderr, "opened device %s from pid:%d\n", canon.c_str(), int(getpid()));
  return *r.open.emplace(canon, std::move(dev)).first->second;
}

std::optional<SharedMemory> shared_memory_of(const std::string& device) {
  const std::string canon = canonical_device(device);
  if (is_device_set(canon)) return std::nullopt;  // one value in several memories
  auto [base, index] = split_index(canon, device);
  const KnownDevice* known = find_known(base);
  if (known->dlpack_type == kPrivate) return std::nullopt;
  return SharedMemory{known->dlpack_type, known->dlpack_type == kDLCPU ? 0 : index};
}

std::optional<std::pair<int, int>> memory_of_device(const std::string& device) {
  std::optional<SharedMemory> where = shared_memory_of(device);
  if (!where) return std::nullopt;
  return std::pair<int, int>{where->dlpack_type, where->ordinal};
}

std::string device_for_memory(int device_type, int device_id) {
  for (const auto& k : kKnown)
    if (k.dlpack_type == device_type && device_type != kPrivate)
      return canonical_device(device_type == kDLCPU || device_id == 0 ? std::string(k.name)
                                                                        : std::string(k.name) + ":" +
                                                                              std::to_string(device_id));
  throw Error("no device of this build uses memory of DLPack device type " + std::to_string(device_type) +
              " (device " + std::to_string(device_id) + ")");
}

std::string format_dims(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); i++) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string default_device() {
  std::string dev = getenv_str("DEV");
  if (!dev.empty()) return canonical_device(dev);
  // A GPU is the best device when it can also compile kernels (NVRTC); found once, then cached.
  static const bool gpu = cuda_device_count() > 0 && nvrtc_available();
  return gpu ? "CUDA" : "CPU";
}

std::string cpu_isa_description() { return cpu_isa().describe(); }

}  // namespace tg
