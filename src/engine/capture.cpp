// Recording and replaying schedule items (engine/capture.h).
#include "engine/capture.h"

#include <utility>

#include "engine/collective.h"

#include "engine/realize.h"
#include "tg/error.h"

namespace tg {
namespace {
thread_local ScheduleCapture* current = nullptr;
thread_local int replaying = 0;  // replay() calls in progress on this thread
}  // namespace

ScheduleCapture::ScheduleCapture() {
  if (current) throw Error("TinyJit: a jitted function is already being captured on this thread (nested TinyJit)");
  current = this;
}

ScheduleCapture::~ScheduleCapture() { current = nullptr; }

ScheduleCapture* ScheduleCapture::active() { return current; }

bool in_jit() { return current || replaying > 0; }

ReplayScope::ReplayScope() { replaying++; }
ReplayScope::~ReplayScope() { replaying--; }

void replay(const std::vector<ScheduleItem>& items, const std::unordered_map<const UOp*, UOpPtr>& rebind) {
  ReplayScope scope;  // undone on every path out, a throwing kernel's included
  std::vector<ScheduleItem> collectives;  // consecutive ones run together (one NCCL group)
  for (const ScheduleItem& item : items) {
    ScheduleItem bound = item;
    for (UOpPtr& b : bound.bufs)
      if (auto it = rebind.find(b.get()); it != rebind.end()) b = it->second;
    if (bound.ast->op == Ops::ALLREDUCE) {
      collectives.push_back(std::move(bound));
      continue;
    }
    if (!collectives.empty()) run_collectives(std::exchange(collectives, {}));
    run_schedule_item(bound);
  }
  if (!collectives.empty()) run_collectives(collectives);
}

}  // namespace tg
