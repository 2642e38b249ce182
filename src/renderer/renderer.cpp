// Shared-memory layout of a kernel's DEFINE_LOCALs, and the names every backend accepts (renderer.h).
#include "renderer/renderer.h"

#include <algorithm>
#include <cctype>

namespace tg {

int64_t shared_offset(int64_t end_of_previous, int64_t bytes) {
  const int64_t align = bytes >= 1024 ? 1024 : 16;
  return (end_of_previous + align - 1) / align * align;
}

int64_t shared_bytes(const std::vector<UOpPtr>& uops) {
  int64_t end = 0;
  for (const UOpPtr& u : uops)
    if (u->op == Ops::DEFINE_LOCAL)
    {
      const int64_t bytes = (u->get<NamedRange>().max + 1) * u->dtype.base().scalar_type().itemsize();
      end = shared_offset(end, bytes) + bytes;
    }
  return end;
}

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

}  // namespace tg
