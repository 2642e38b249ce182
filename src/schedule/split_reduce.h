#pragma once
// split_reduceop: a reduce of many elements into few outputs becomes two kernels, as tinygrad's
// split_reduceop. One reduce axis of size N is split into (d, N/d) with d an output dim of the first stage,
// so that stage has d times more outputs to run in parallel (GPU blocks, CPU threads), each reducing a
// contiguous N/d chunk; the second stage reduces the d partials. Accuracy improves with it: a float32 sum
// of 2^28 values adds at most N/d values in one chain instead of N.
//
// Knobs (tinygrad's names): SPLIT_REDUCEOP (1: on), REDUCEOP_SPLIT_THRESHOLD (split when the reduce takes
// at least this many inputs per output, 32768), REDUCEOP_SPLIT_SIZE (log2 of the most partials written,
// 22). The split factor d is the largest divisor of the axis in [8, min(256, 2^size / outputs)]. Only reduces
// to fewer than 256 outputs are split (more outputs keep the device busy by themselves).
#include "uop/uop.h"

namespace tg {

// Rewrites every REDUCE_AXIS below sink that qualifies. The tensor graph is unchanged elsewhere.
UOpPtr split_reduces(const UOpPtr& sink);

// The split one REDUCE_AXIS would get: (axis, d), or axis -1 when it is left alone.
std::pair<int64_t, int64_t> split_reduce_choice(const UOp* reduce);

}  // namespace tg
