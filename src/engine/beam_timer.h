#pragma once
// BEAM's timing of candidate kernels on a device (the CandidateTimer of codegen/opt/search.h): render each
// candidate, drop those that render to a program already timed, check the program's memory accesses statically
// (codegen/access_bounds.h), compile the survivors in parallel, then run each on buffers of its own.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "codegen/kernel.h"
#include "runtime/device.h"

namespace tg {

// The launch a GPU candidate is timed with: its grid halved, largest dim first, down to 65536 blocks; `scale` is
// the ratio of the blocks, by which its time is multiplied. The smaller grid's blocks are a subset of the full
// one's, so every access stays inside the bounds proven for the full grid. A spec without a grid is unchanged.
ProgramSpec reduced_grid(const ProgramSpec& spec, double& scale);

class CandidateBench {
 public:
  // Allocates one buffer per parameter of `ast` (sized from the AST's views: what the kernel may touch), the
  // inputs filled with small finite values; throws tg::Error when the device cannot allocate them.
  CandidateBench(Device& dev, const UOpPtr& ast);
  ~CandidateBench();
  CandidateBench(const CandidateBench&) = delete;
  CandidateBench& operator=(const CandidateBench&) = delete;

  // The CandidateTimer: seconds per candidate (the fastest of 3 to 10 runs, more for short kernels; 1 run when it
  // is slower than give_up_after), +inf where it was skipped (a duplicate program, an unproven memory access, too much
  // shared memory) or failed (to lower, compile, load or run). Never throws for a bad candidate.
  std::vector<double> time(const std::vector<Kernel>& candidates, double give_up_after);

  // The default heuristics' kernel runs without BEAM anyway: its program is timed even where the bounds check cannot
  // prove it (a Hopper matmul's WGMMA reads shared memory through descriptors), so BEAM never ends slower than it.
  void trust(const Kernel& k);

  // Candidates skipped because the bounds check could not prove their accesses safe, and the first reason.
  size_t unproven() const { return unproven_; }
  const std::string& first_unproven_reason() const { return first_unproven_; }

 private:
  struct Prepared {
    size_t index;  // into the candidates
    ProgramSpec spec;
    std::string binary, error;
  };
  std::vector<Prepared> prepare(const std::vector<Kernel>& candidates);
  void compile_all(std::vector<Prepared>& programs);
  double time_one(const Prepared& p, double give_up_after);

  Device& dev_;
  std::vector<int64_t> elements_;  // per parameter
  std::vector<size_t> bytes_;
  std::vector<void*> bufs_;
  std::set<std::string> seen_;     // sources already timed in this search
  std::set<std::string> trusted_;  // sources run without the bounds check (trust())
  size_t unproven_ = 0;
  std::string first_unproven_;
};

// Per parameter of a kernel AST, the elements its views may touch (the largest real_size of the views that read
// or write it) and its element dtype. Parameters are DEFINE_GLOBAL args 0..n-1.
struct AstBuffer {
  int64_t elements = 0;
  DType dtype;
};
std::vector<AstBuffer> ast_buffers(const UOpPtr& ast);

}  // namespace tg
