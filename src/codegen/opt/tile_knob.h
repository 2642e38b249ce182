#pragma once
// The shape of a matmul kernel's tiles, as the heuristics choose it (codegen/opt/tensor_cores.cpp, gemm.cpp),
// and the five-number knobs that override it for tuning: TC_TILE / GEMM_TILE = um,un,tm,tn,uk.
#include "helpers/env.h"

namespace tg {

struct MatmulTile {
  int upcast_m, upcast_n;    // register tile: values along M and N each thread (or warp tile) holds
  int threads_m, threads_n;  // threads (or warps) of a workgroup along M and N
  int unroll_k;              // K unrolled per step of the reduce loop
};

inline MatmulTile matmul_tile(const char* knob, MatmulTile d, int hi) {
  auto v = getenv_ints(knob, {d.upcast_m, d.upcast_n, d.threads_m, d.threads_n, d.unroll_k}, 1, hi);
  return {int(v[0]), int(v[1]), int(v[2]), int(v[3]), int(v[4])};
}

}  // namespace tg
