#pragma once
// prefetch: software prefetches for CPU kernels that stream a large input tile by tile (a matrix-vector
// product's weight rows). A kernel whose output loop O walks a buffer in contiguous tiles of `a` elements, each
// read over the trip of an inner reduce loop R, asks for the next tile while it works on this one: every R step
// prefetches its share of tile O + 1 (a cache line or a few), so the memory system has the next rows in flight
// while the current ones are multiplied. Two cores could not keep the memory bus busy on their own: a
// 576 x 576 Q4_1 product over a model-sized working set took 22 us, 16 us with these prefetches (hardware
// prefetchers follow one stream per page; a tile of 8 rows is read 16 bytes a row at a time).
//
// A pass over a lowered kernel (codegen/lowerer.h), before linearize: the SINK gains PREFETCH(buffer, index)
// nodes, which sit in R's loop because their index depends on R. Only for renderers that have prefetches
// (Renderer::prefetches). A prefetch never faults, so an index past the buffer's end (the last tile's) is
// harmless.
#include "uop/uop.h"

namespace tg {

UOpPtr add_prefetches(const UOpPtr& sink);

}  // namespace tg
