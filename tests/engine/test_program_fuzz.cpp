// The random-program differential fuzzer (program_fuzz.h): random tensor programs on the CPU (generated C)
// and on the interpreter, and on CUDA and OpenCL where such a device opens, forward values and gradients compared.
// ctest runs it twice: plain (the interpreter runs CPU-style kernels) and as program_fuzz_interp_emulate_cuda
// (EMULATE=CUDA: the interpreter runs GPU-lowered kernels). FUZZ_PROGRAMS=n runs n programs (default 120; 40
// in Debug builds), FUZZ_SEED=s starts at seed s (default 1), FUZZ_PRINT=1 prints every program; a failure
// prints the program and the line that replays it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "program_fuzz.h"

namespace {

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

bool opens(const std::string& device) {
  try {
    tg::Tensor(std::vector<float>{1}, {1}, {.device = device}).realize();
    return true;
  } catch (const tg::Error&) {
    return false;
  }
}

}  // namespace

TEST(ProgramFuzz, CpuInterpreterAndGpusAgree) {
#ifdef NDEBUG
  const uint64_t default_count = 120;
#else
  const uint64_t default_count = 40;  // Debug and the asan preset run the library several times slower
#endif
  const uint64_t count = env_u64("FUZZ_PROGRAMS", default_count), first = env_u64("FUZZ_SEED", 1);
  std::vector<std::string> devices = {"INTERP"};
  // every backend present here (CL: PoCL's CPU device in CI; LLVM where the build found it); EMULATE changes only
  // the interpreter, so the EMULATE run leaves them to the plain one
  for (const char* backend : {"LLVM", "CUDA", "CL"})
    if (!std::getenv("EMULATE") && opens(backend)) devices.push_back(backend);
  int failures = 0, backward = 0, threw = 0, nodes = 0;
  std::map<std::string, int> rejected, errors;
  for (uint64_t seed = first; seed < first + count && failures < 3; seed++) {
    program_fuzz::Program p;
    try {
      p = program_fuzz::generate(seed);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "seed " << seed << ": generating the program: " << e.what();
      failures++;
      continue;
    }
    for (auto& r : p.rejected) rejected[r.substr(0, r.find(':', r.find(':') + 1))]++;
    nodes += int(p.nodes.size());
    backward += p.backward;
    program_fuzz::Result ref = program_fuzz::run(p, "CPU");
    if (std::getenv("FUZZ_PRINT")) std::printf("%s", p.describe().c_str());
    threw += !ref.error.empty();
    if (!ref.error.empty()) errors[ref.error.substr(0, 160)]++;
    for (auto& dev : devices) {
      std::string m = program_fuzz::compare(p, ref, program_fuzz::run(p, dev));
      if (m.empty()) continue;
      ADD_FAILURE() << "CPU against " << dev << ": " << m << (ref.error.empty() ? "" : "\nCPU threw: " + ref.error)
                    << "\n"
                    << p.describe();
      failures++;
    }
  }
  std::printf(
      "program fuzz: %llu programs from seed %llu (%d nodes, %d with backward, %d threw tg::Error on every "
      "device), CPU against",
      (unsigned long long)count, (unsigned long long)first, nodes, backward, threw);
  for (auto& d : devices) std::printf(" %s", d.c_str());
  std::printf("%s\n", std::getenv("EMULATE") ? (std::string(" (EMULATE=") + std::getenv("EMULATE") + ")").c_str() : "");
  for (auto& [msg, n] : errors) std::printf("  %d programs threw: %s\n", n, msg.c_str());
  for (auto& [msg, n] : rejected) std::printf("  generator dropped %d ops: %s\n", n, msg.c_str());
}

// The comparison is not vacuous: one changed element of an exact output, or a NaN on one side, is caught.
TEST(ProgramFuzz, CompareCatchesADifference) {
  for (uint64_t seed = 1;; seed++) {
    program_fuzz::Program p = program_fuzz::generate(seed);
    const program_fuzz::Node& out = p.nodes[size_t(p.outputs[0])];
    if (!out.v.exact() || !out.dtype.is_float() || out.v.nan) continue;
    program_fuzz::Result a = program_fuzz::run(p, "CPU");
    if (a.outputs[0].empty()) continue;
    program_fuzz::Result b = a;
    b.outputs[0][0] += 1;
    EXPECT_NE(program_fuzz::compare(p, a, b), "") << p.describe();
    b.outputs[0][0] = std::nan("");
    EXPECT_NE(program_fuzz::compare(p, a, b), "") << p.describe();
    EXPECT_EQ(program_fuzz::compare(p, a, a), "");
    return;
  }
}
