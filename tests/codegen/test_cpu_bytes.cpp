// CPU kernels that write bytes (codegen/opt/heuristic.cpp, Kernel::writes_bytes): an elementwise one takes 16-byte
// vectors along its contiguous dim (a quantized matrix's blocks compacted at load), and computes what the
// interpreter computes, wrapping included.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "codegen/kernel.h"
#include "codegen/opt/heuristic.h"
#include "runtime/device.h"
#include "schedule/schedule.h"
#include "tg/tg.h"

using tg::Tensor;

namespace {

std::vector<uint8_t> bytes(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; i++) v[i] = uint8_t((i * 2654435761u + seed) >> 13);
  return v;
}

// 16 bytes of every 20 (a Q4_1 block without its two scales), and the sum of two such slices (wrapping).
Tensor quants(const std::string& dev, int64_t blocks, int64_t offset) {
  Tensor raw(bytes(size_t(blocks * 20), 1), {blocks, 20}, {.device = dev});
  return raw.shrink({{0, blocks}, {offset, offset + 16}});
}

}  // namespace

TEST(CpuBytes, ACopyOfBlockQuantsTakesSixteenByteVectors) {
  Tensor q = quants("CPU", 1000, 4).contiguous();
  tg::Schedule s = tg::create_schedule({q.uop()});
  tg::Kernel k(s.items.back().ast, tg::get_device("CPU").renderer());
  hand_coded_optimizations(k);
  bool vector = false;
  for (auto& o : k.applied_opts()) vector |= o.op == tg::OptOps::UPCAST && o.amount == 16;
  EXPECT_TRUE(vector);
}

TEST(CpuBytes, ByteKernelsMatchTheInterpreter) {
  for (int64_t blocks : {1, 7, 1000, 4096}) {
    auto run = [&](const std::string& dev) {
      return (quants(dev, blocks, 4) + quants(dev, blocks, 2) * uint8_t(3)).contiguous().tolist<uint8_t>();
    };
    EXPECT_EQ(run("INTERP"), run("CPU")) << blocks << " blocks";
  }
}
