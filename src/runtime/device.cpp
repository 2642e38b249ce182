// The device registry: names -> devices, each opened once per process, on first use, and kept until exit.
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <map>
#include <mutex>

#include "helpers/env.h"
#include "runtime/devices.h"
#include "tg/context.h"
#include "tg/error.h"

namespace tg {
namespace {

struct KnownDevice {
  const char* name;
  std::unique_ptr<Device> (*make)();
};
// Order matters only for the error message.
const KnownDevice kKnown[] = {
    {"CPU", make_cpu_device}, {"INTERP", make_interp_device}, {"NULL", make_null_device}, {"HOST", make_host_device}};

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

std::string canonical_device(const std::string& name) {
  std::string up;
  for (char c : name) up += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::string base = up, index;
  if (size_t colon = up.find(':'); colon != std::string::npos) {
    base = up.substr(0, colon);
    index = up.substr(colon + 1);
  }
  if (!find_known(base))
    throw Error("unknown device '" + name + "' (known devices: " + known_list() + ")");
  // Every device known so far is a single instance, so only index 0 names it.
  if (!index.empty() && index != "0")
    throw Error("device '" + name + "': " + base + " has only one instance (use " + base + " or " + base + ":0)");
  return base;
}

Device& get_device(const std::string& name) {
  std::string canon = canonical_device(name);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.open.find(canon);
  if (it != r.open.end()) return *it->second;
  std::unique_ptr<Device> dev = find_known(canon)->make();  // throws when the device cannot open here
  if (!dev) throw Error("device " + canon + " could not be opened");
  if (DEBUG >= 1) std::fprintf(stderr, "opened device %s from pid:%d\n", canon.c_str(), int(getpid()));
  return *r.open.emplace(canon, std::move(dev)).first->second;
}

std::string default_device() {
  std::string dev = getenv_str("DEV");
  return dev.empty() ? "CPU" : canonical_device(dev);
}

}  // namespace tg
