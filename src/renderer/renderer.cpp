// Shared-memory layout of a kernel's DEFINE_LOCALs (renderer.h).
#include "renderer/renderer.h"

namespace tg {

int64_t shared_offset(int64_t end_of_previous) { return (end_of_previous + 15) / 16 * 16; }

int64_t shared_bytes(const std::vector<UOpPtr>& uops) {
  int64_t end = 0;
  for (const UOpPtr& u : uops)
    if (u->op == Ops::DEFINE_LOCAL)
      end = shared_offset(end) + (u->get<NamedRange>().max + 1) * u->dtype.base().scalar_type().itemsize();
  return end;
}

}  // namespace tg
