// The UOp interpreter. Two phases: loading builds a Plan (each node decoded once into an Instr that names
// its value slots and jump targets, with every structural rule checked), running steps threads through
// the Plan with a program counter. Nothing is looked up by node at run time.
#include "runtime/interpreter.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

#include "codegen/verify_program.h"
#include "renderer/tensor_core.h"
#include "runtime/interpreter_plan.h"
#include "tg/error.h"
#include "uop/exec_alu.h"

namespace tg {

// Buffers hold values in the host's byte order; num_to_bits/num_from_bits give the low bytes first.
static_assert(std::endian::native == std::endian::little, "the interpreter reads buffers as little endian");

using namespace interp;  // NOLINT: the plan's types

namespace {

// A thread: its own program counter and values, so the threads of a workgroup can be interleaved.
struct ThreadCtx {
  size_t pc = 0;
  std::vector<Num> vals;
  std::array<int64_t, 3> gid{}, lid{};
  std::vector<Num> operands;  // reused for exec_alu's argument so ALU ops never allocate
};

enum class Stop : uint8_t { kBarrier, kDone };

}  // namespace

// ---------------------------------------------------------------------------------------------------
// Running.
namespace {

// One buffer of the launch, typed by its DEFINE_GLOBAL.
struct Region {
  std::byte* base = nullptr;
  int64_t size = 0;  // elements
  DType dtype;
  int itemsize = 0;
};

class Executor {
 public:
  Executor(const Interpreter::Plan& plan, const std::vector<InterpBuffer>& bufs, const std::vector<int64_t>& vars)
      : p_(plan) {
    if (bufs.size() < plan.buf_dtypes.size())
      throw Error(prefix(p_.name) + "needs " + std::to_string(plan.buf_dtypes.size()) + " buffers, got " +
                  std::to_string(bufs.size()));
    for (size_t b = 0; b < plan.buf_dtypes.size(); b++) {
      Region r;
      r.dtype = plan.buf_dtypes[b];
      if (r.dtype != dtypes::void_) {
        r.base = static_cast<std::byte*>(bufs[b].ptr);
        r.itemsize = r.dtype.itemsize();
        r.size = r.base ? int64_t(bufs[b].bytes / size_t(r.itemsize)) : 0;
      }
      regions_.push_back(r);
    }
    for (auto& [dt, n] : plan.locals) {
      Region r;
      r.dtype = dt;
      r.itemsize = dt.itemsize();
      r.size = n;
      local_mem_.emplace_back(size_t(n * r.itemsize));
      r.base = local_mem_.back().data();
      locals_.push_back(r);
    }
    if (vars.size() != plan.n_vars)
      throw Error(prefix(p_.name) + "needs " + std::to_string(plan.n_vars) + " vars, got " +
                  std::to_string(vars.size()));
    for (size_t k = 0; k < vars.size(); k++) {
      auto [lo, hi] = plan.var_bounds[k];
      if (!p_.var_names[k].empty() && (vars[k] < lo || vars[k] > hi))
        throw Error(prefix(p_.name) + "var '" + p_.var_names[k] + "' = " + std::to_string(vars[k]) +
                    " is outside its range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
      vars_.push_back(Num{vars[k], 0});
    }
  }

  void run() {
    const Launch& ln = p_.launch;
    std::vector<ThreadCtx> group(size_t(ln.local[0] * ln.local[1] * ln.local[2]));
    for (size_t t = 0; t < group.size(); t++) {
      group[t].vals.assign(size_t(p_.n_slots), Num{});
      group[t].lid = {int64_t(t) % ln.local[0], int64_t(t) / ln.local[0] % ln.local[1],
                      int64_t(t) / (ln.local[0] * ln.local[1])};
    }
    for (int64_t z = 0; z < ln.global[2]; z++)
      for (int64_t y = 0; y < ln.global[1]; y++)
        for (int64_t x = 0; x < ln.global[0]; x++) {
          for (ThreadCtx& t : group) {
            t.pc = 0;
            t.gid = {x, y, z};
          }
          // Shared memory starts each workgroup as garbage (all bits set: NaN for floats), so a read of a
          // slot no thread wrote shows up rather than passing with a stale or zero value.
          for (auto& m : local_mem_) std::fill(m.begin(), m.end(), std::byte{0xff});
          run_group(group);
        }
  }

 private:
  // Threads of a workgroup run in turn up to the next BARRIER; when all stand at the same one, all pass.
  void run_group(std::vector<ThreadCtx>& group) {
    for (;;) {
      size_t done = 0;
      const ThreadCtx* waiting = nullptr;  // the first thread that stopped at a BARRIER
      for (ThreadCtx& t : group) {
        if (step(t) == Stop::kDone) {
          done++;
        } else if (!waiting) {
          waiting = &t;
        } else if (t.pc != waiting->pc) {
          fail_at(t, t.pc,
                  "is a different BARRIER than uop " + std::to_string(waiting->pc) +
                      " where other threads of the workgroup wait");
        }
      }
      if (done == group.size()) return;
      if (done != 0)
        fail_at(*waiting, waiting->pc,
                "is reached by only " + std::to_string(group.size() - done) + " of " + std::to_string(group.size()) +
                    " threads of the workgroup");
      if (p_.code[waiting->pc].op == Ops::WMMA) wmma(group, waiting->pc);
      if (p_.code[waiting->pc].op == Ops::LDMATRIX) ldmatrix(group, waiting->pc);
      if (p_.code[waiting->pc].op == Ops::WGMMA) wgmma(group, waiting->pc);
      for (ThreadCtx& t : group) t.pc++;  // everyone passes the barrier together
    }
  }

  // A WMMA runs when every thread of the workgroup stands at it: each warp (32 threads of consecutive
  // linear ids, as on the GPU) multiplies its lanes' registers together.
  void wmma(std::vector<ThreadCtx>& group, size_t pc) const {
    const Instr& in = p_.code[pc];
    const int lanes = TensorCore::kLanes;
    if (group.size() % size_t(lanes) != 0)
      fail_at(group[0], pc, "needs whole warps of 32 threads, the workgroup has " + std::to_string(group.size()));
    const TensorCore* tc = TensorCore::from_name(p_.uops[pc]->get<std::string>());
    if (!tc) fail_at(group[0], pc, "names no tensor core");
    const size_t na = size_t(tc->a_regs()), nb = size_t(tc->b_regs()), nc = TensorCore::kC;
    for (size_t w = 0; w < group.size(); w += size_t(lanes)) {
      const size_t nl = size_t(lanes);
      std::vector<std::vector<double>> a(nl), b(nl), c(nl);
      for (size_t l = 0; l < size_t(lanes); l++) {
        const std::vector<Num>& v = group[w + l].vals;
        for (size_t k = 0; k < na + nb + nc; k++)
          (k < na ? a : k < na + nb ? b : c)[l].push_back(v[size_t(in.wide[k])].f);
      }
      std::vector<std::vector<double>> d = emulate_mma(a, b, c, *tc);
      for (size_t l = 0; l < size_t(lanes); l++)
        for (size_t i = 0; i < nc; i++) group[w + l].vals[size_t(in.out) + i] = Num{0, d[l][i]};
    }
  }

  // An LDMATRIX runs when every thread of the workgroup stands at it: in each warp, lane 8j + r gives the
  // address of row r of matrix j, and lane 4g + t gets row g's elements 2t, 2t + 1 (trans: rows 2t and 2t + 1,
  // element g) of each matrix.
  void ldmatrix(std::vector<ThreadCtx>& group, size_t pc) const {
    const Instr& in = p_.code[pc];
    const size_t lanes = size_t(TensorCore::kLanes);
    if (group.size() % lanes != 0)
      fail_at(group[0], pc, "needs whole warps of 32 threads, the workgroup has " + std::to_string(group.size()));
    for (size_t w = 0; w < group.size(); w += lanes) {
      std::vector<Num> out(lanes * size_t(2 * in.count));
      for (size_t l = 0; l < lanes; l++) {
        const size_t g = l / 4, t = l % 4;
        for (size_t j = 0; j < size_t(in.count); j++)
          for (size_t e = 0; e < 2; e++) {
            const size_t row_lane = in.trans ? 8 * j + 2 * t + e : 8 * j + g;
            const int64_t row = group[w + row_lane].vals[size_t(in.src[1])].i;
            if (row % 8 != 0)
              fail_at(group[w + row_lane], pc, "row address " + std::to_string(row) + " is not 16-byte aligned");
            const int64_t col = in.trans ? int64_t(g) : int64_t(2 * t + e);
            out[l * size_t(2 * in.count) + 2 * j + e] = load(group[w + row_lane], pc, in, row + col);
          }
      }
      for (size_t l = 0; l < lanes; l++)
        for (size_t i = 0; i < size_t(2 * in.count); i++)
          group[w + l].vals[size_t(in.out) + i] = out[l * size_t(2 * in.count) + i];
    }
  }

  // A WGMMA runs when every thread of the workgroup stands at it: each warpgroup (128 threads of consecutive
  // linear ids) reads its A and B from shared memory at the addresses its first thread gives (every thread must
  // give the same), in the arg's core-matrix layout, and adds their product to the lanes of C its threads hold
  // (renderer/tensor_core.h has both layouts).
  void wgmma(std::vector<ThreadCtx>& group, size_t pc) const {
    const Instr& in = p_.code[pc];
    const WgmmaArg arg = WgmmaArg::unpack(p_.uops[pc]->get<std::vector<int64_t>>());
    constexpr size_t kGroup = 128;
    if (group.size() % kGroup != 0)
      fail_at(group[0], pc, "needs whole warpgroups of 128 threads, the workgroup has " + std::to_string(group.size()));
    const size_t n = size_t(arg.n), lanes = n / 2;
    Instr from_b = in;
    from_b.buf = in.aux;
    // element (r, c) of operand `op` (r along M or N, c along K) at offset `base`
    auto elem = [&](const ThreadCtx& t, const Instr& src, const WgmmaOperand& o, int64_t base, int64_t r, int64_t c) {
      return load(t, pc, src, o.element(base, r, c)).f;
    };
    for (size_t w0 = 0; w0 < group.size(); w0 += kGroup) {
      const ThreadCtx& first = group[w0];
      const int64_t a0 = first.vals[size_t(in.wide[1])].i, b0 = first.vals[size_t(in.wide[3])].i;
      for (size_t l = 0; l < kGroup; l++) {
        const ThreadCtx& t = group[w0 + l];
        if (t.vals[size_t(in.wide[1])].i != a0 || t.vals[size_t(in.wide[3])].i != b0)
          fail_at(t, pc, "gives other A/B addresses than the first thread of its warpgroup");
      }
      if (a0 % 8 != 0 || b0 % 8 != 0) fail_at(first, pc, "A/B address is not 16-byte aligned");
      std::vector<double> a(64 * 16), b(16 * n), d(64 * n);
      for (int64_t m = 0; m < 64; m++)
        for (int64_t k = 0; k < 16; k++) a[size_t(m * 16 + k)] = elem(first, in, arg.a, a0, m, k);
      for (int64_t k = 0; k < 16; k++)
        for (int64_t c = 0; c < int64_t(n); c++) b[size_t(k) * n + size_t(c)] = elem(first, from_b, arg.b, b0, c, k);
      // thread 32 w + 4 g + t holds lane 4 j + i at row 16 w + g + 8 (i / 2), column 8 j + 2 t + i % 2
      auto at = [&](size_t l, size_t lane) {
        const size_t w = l / 32, g = l % 32 / 4, t = l % 4, j = lane / 4, i = lane % 4;
        return (16 * w + g + 8 * (i / 2)) * n + 8 * j + 2 * t + i % 2;
      };
      for (size_t l = 0; l < kGroup; l++)
        for (size_t q = 0; q < lanes; q++) d[at(l, q)] = group[w0 + l].vals[size_t(in.wide[5 + q])].f;
      emulate_wgmma(a, b, d, arg.n);
      for (size_t l = 0; l < kGroup; l++)
        for (size_t q = 0; q < lanes; q++) group[w0 + l].vals[size_t(in.out) + q] = Num{0, d[at(l, q)]};
    }
  }

  // CP_ASYNC: the copy, done at once (zeros where not valid, reading nothing).
  void cp_async(const ThreadCtx& t, size_t pc, const Instr& in) const {
    const Num* v = t.vals.data();
    if (v[in.wide[4]].i == 0) return;
    const bool valid = v[in.wide[5]].i != 0;
    const int64_t dst = v[in.wide[1]].i, src = v[in.wide[3]].i;
    Instr from = in;
    from.op = Ops::LOAD;
    from.buf = in.aux;
    for (int64_t e = 0; e < in.count; e++) {
      uint64_t bits = 0;
      const int sz = region(in.aux).itemsize;
      if (valid) std::memcpy(&bits, address(t, pc, from, src + e), size_t(sz));
      std::memcpy(address(t, pc, in, dst + e), &bits, size_t(sz));
    }
  }

  // An mbarrier's state, kept in its 8 bytes of shared memory: bit 63 clear once initialized (shared memory starts
  // all ones), the phases completed, the arrivals the current phase still waits for, and its bytes in flight.
  struct Mbarrier {
    int64_t phase = 0, pending = 0, count = 0, tx = 0;
    uint64_t pack() const {
      return uint64_t(phase & 0xffff) << 44 | uint64_t(pending & 0x7ff) << 33 | uint64_t(count & 0x7ff) << 22 |
             uint64_t(tx & 0x3fffff);
    }
    static Mbarrier unpack(uint64_t v) {
      return {int64_t(v >> 44 & 0xffff), int64_t(v >> 33 & 0x7ff), int64_t(v >> 22 & 0x7ff),
              int64_t(v & 0x3fffff) - (v & 0x200000 ? int64_t(0x400000) : 0)};  // tx: 22 bits, signed
    }
  };

  // MBAR_INIT, MBAR_EXPECT, MBAR_WAIT (codegen/program.h). The copies land at once, so a phase completes as soon
  // as its last arrival and its last byte are in; a wait for a phase that has not completed by then would wait
  // forever here (the threads run one after another up to each barrier), and is an error.
  void mbarrier(const ThreadCtx& t, size_t pc, const Instr& in) const {
    const Num* v = t.vals.data();
    const int64_t idx = v[in.src[1]].i;
    uint64_t bits = 0;
    std::memcpy(&bits, address(t, pc, in, idx), 8);
    if (in.op == Ops::MBAR_INIT) {
      if (v[in.src[2]].i == 0) return;
      bits = Mbarrier{0, in.count, in.count, 0}.pack();
    } else if (bits >> 63) {
      fail_at(t, pc, "uses barrier " + std::to_string(idx) + " before an MBAR_INIT set it up");
    } else if (in.op == Ops::MBAR_WAIT) {
      const Mbarrier b = Mbarrier::unpack(bits);
      if (b.phase % 2 == v[in.src[2]].i % 2)  // the phase of that parity is the current one: not completed
        fail_at(t, pc, "waits for phase " + std::to_string(b.phase) + " of barrier " + std::to_string(idx) + " (" +
                           std::to_string(b.pending) + " arrivals and " + std::to_string(b.tx) +
                           " bytes missing), which nothing before it completes");
      return;
    } else {
      if (v[in.src[2]].i == 0) return;
      bits = arrive(Mbarrier::unpack(bits), 1, in.count).pack();
    }
    std::memcpy(address(t, pc, in, idx), &bits, 8);
  }
  static Mbarrier arrive(Mbarrier b, int64_t arrivals, int64_t bytes) {
    b.pending -= arrivals;
    b.tx += bytes;
    if (b.pending == 0 && b.tx == 0) b.phase++, b.pending = b.count;
    return b;
  }

  // TMA_LOAD: the box, copied at once (renderer/tensor_map.h: zeros outside the matrix), its bytes counted on the
  // barrier.
  void tma_load(const ThreadCtx& t, size_t pc, const Instr& in) const {
    const Num* v = t.vals.data();
    if (v[in.wide[7]].i == 0) return;
    const TensorMapArg& m = p_.tma_loads[size_t(in.count)].map;
    const int64_t dst = v[in.wide[1]].i, col = v[in.wide[3]].i, row = v[in.wide[4]].i;
    if (dst * m.itemsize % 1024 != 0) fail_at(t, pc, "copies to element " + std::to_string(dst) + ", not 1024-byte aligned");
    if (col % m.width() != 0 || col < 0 || row < 0)
      fail_at(t, pc, "copies the box at row " + std::to_string(row) + ", col " + std::to_string(col) +
                         " (expected coordinates >= 0, col a multiple of " + std::to_string(m.width()) + ")");
    Instr from = in;
    from.op = Ops::LOAD;
    from.buf = in.aux;
    for (int64_t r = 0; r < m.box_rows; r++)
      for (int64_t c = 0; c < m.width(); c++) {
        uint64_t bits = 0;
        if (row + r < m.rows && col + c < m.cols)
          std::memcpy(&bits, address(t, pc, from, (row + r) * m.cols + col + c), size_t(m.itemsize));
        std::memcpy(address(t, pc, in, m.landing(dst, r, c)), &bits, size_t(m.itemsize));
      }
    Instr bar = in;
    bar.buf = p_.tma_loads[size_t(in.count)].bars;
    const int64_t idx = v[in.wide[6]].i;
    uint64_t bits = 0;
    std::memcpy(&bits, address(t, pc, bar, idx), 8);
    if (bits >> 63) fail_at(t, pc, "counts its bytes on barrier " + std::to_string(idx) + " before an MBAR_INIT");
    bits = arrive(Mbarrier::unpack(bits), 0, -m.box_bytes()).pack();
    std::memcpy(address(t, pc, bar, idx), &bits, 8);
  }

  [[noreturn]] void fail_at(const ThreadCtx& t, size_t pc, const std::string& why) const {
    std::string where = node_str(int32_t(pc), *p_.uops[pc]);
    const Launch& ln = p_.launch;
    if (ln.global != std::array<int64_t, 3>{1, 1, 1} || ln.local != std::array<int64_t, 3>{1, 1, 1})
      where += " in thread gid (" + std::to_string(t.gid[0]) + "," + std::to_string(t.gid[1]) + "," +
               std::to_string(t.gid[2]) + ") lid (" + std::to_string(t.lid[0]) + "," + std::to_string(t.lid[1]) + "," +
               std::to_string(t.lid[2]) + ")";
    throw Error(prefix(p_.name) + where + " " + why);
  }

  // The element address for an access, after the bounds check.
  std::byte* address(const ThreadCtx& t, size_t pc, const Instr& in, int64_t idx) const {
    const Region& r = region(in.buf);
    if (idx < 0 || idx >= r.size)
      fail_at(t, pc,
              std::string(in.op == Ops::LOAD || in.op == Ops::LDMATRIX || in.op == Ops::WGMMA ? "reads" : "writes") +
                  " out of bounds: buffer " +
                  (in.buf >= kLocalBase ? "local " + std::to_string(in.buf - kLocalBase) : std::to_string(in.buf)) +
                  " (" + r.dtype.repr() + "), index " + std::to_string(idx) + ", size " + std::to_string(r.size));
    return r.base + idx * r.itemsize;
  }

  Num load(const ThreadCtx& t, size_t pc, const Instr& in, int64_t idx) const {
    uint64_t bits = 0;
    std::memcpy(&bits, address(t, pc, in, idx), size_t(region(in.buf).itemsize));
    return num_from_bits(bits, in.dtype);
  }

  void store(const ThreadCtx& t, size_t pc, const Instr& in, int64_t idx, Num v) const {
    uint64_t bits = num_to_bits(v, in.dtype);
    std::memcpy(address(t, pc, in, idx), &bits, size_t(region(in.buf).itemsize));
  }

  Num special(const ThreadCtx& t, const Instr& in) const {
    auto d = size_t(in.aux);
    switch (in.special) {
      case SpecialKind::kGroup:
        return Num{t.gid[d], 0};
      case SpecialKind::kLocal:
        return Num{t.lid[d], 0};
      case SpecialKind::kAbsolute:
        return Num{t.gid[d] * p_.launch.local[d] + t.lid[d], 0};
    }
    return Num{};
  }

  // RANGE, ENDRANGE and IF: the pc to go on at (the next one where nothing jumps).
  size_t control(const Instr& in, Num* v, size_t pc) const {
    switch (in.op) {
      case Ops::RANGE:  // control reaches a RANGE only from above: this is always a loop's first entry
        v[in.out] = v[in.src[0]];
        return v[in.src[0]].i >= v[in.src[1]].i ? size_t(in.target) + 1 : pc + 1;
      case Ops::ENDRANGE: {
        const Instr& r = p_.code[size_t(in.target)];
        const int64_t next = v[r.out].i + 1;
        if (next >= v[r.src[1]].i) return pc + 1;
        v[r.out] = Num{next, 0};
        return size_t(in.target) + 1;
      }
      default:  // IF
        return v[in.src[0]].i == 0 ? size_t(in.target) + 1 : pc + 1;
    }
  }

  // The asynchronous copies and their barriers: copies land at once (commits and waits have nothing to do, a
  // tensor map is only a parameter), TMA barriers count their bytes.
  void async_copy(const ThreadCtx& t, size_t pc, const Instr& in) const {
    if (in.op == Ops::CP_ASYNC) cp_async(t, pc, in);
    else if (in.op == Ops::TMA_LOAD) tma_load(t, pc, in);
    else if (in.op == Ops::MBAR_INIT || in.op == Ops::MBAR_EXPECT || in.op == Ops::MBAR_WAIT) mbarrier(t, pc, in);
  }

  // Runs `t` from its pc until it finishes or stops at a BARRIER (t.pc then points at the BARRIER).
  Stop step(ThreadCtx& t) const {
    const std::vector<Instr>& code = p_.code;
    Num* v = t.vals.data();
    size_t pc = t.pc;
    while (pc < code.size()) {
      const Instr& in = code[pc];
      switch (in.op) {
        case Ops::DEFINE_GLOBAL:
        case Ops::DEFINE_LOCAL:
        case Ops::ENDIF:
        case Ops::PREFETCH:  // a hint
          break;
        case Ops::CONST:
          v[in.out] = in.imm;
          break;
        case Ops::DEFINE_VAR:
          v[in.out] = vars_[size_t(in.aux)];
          break;
        case Ops::SPECIAL:
          v[in.out] = special(t, in);
          break;
        case Ops::RANGE:
        case Ops::ENDRANGE:
        case Ops::IF:
          pc = control(in, v, pc);
          continue;
        case Ops::BARRIER:
        case Ops::WMMA:  // warp-wide: every thread must get here first (run_group)
        case Ops::LDMATRIX:
        case Ops::WGMMA:
          t.pc = pc;
          return Stop::kBarrier;
        case Ops::CP_ASYNC:
        case Ops::ASYNC_COMMIT:
        case Ops::ASYNC_WAIT:
        case Ops::TENSOR_MAP:
        case Ops::TMA_LOAD:
        case Ops::MBAR_INIT:
        case Ops::MBAR_EXPECT:
        case Ops::MBAR_WAIT:
          async_copy(t, pc, in);
          break;
        case Ops::GEP:
          v[in.out] = v[in.src[0] + in.aux];
          break;
        case Ops::DEFINE_ACC:
          v[in.out] = cast_num(v[in.src[0]], in.src_dtype, in.dtype);
          break;
        case Ops::ASSIGN:
          v[in.out] = v[in.src[1]];
          break;
        case Ops::LOAD:
          // A false gate gives the alt value without touching memory.
          if (in.nsrc == 4 && v[in.src[2]].i == 0)
            v[in.out] = v[in.src[3]];
          else
            v[in.out] = load(t, pc, in, v[in.src[1]].i);
          break;
        case Ops::STORE:
          if (in.nsrc == 3 || v[in.src[3]].i != 0) store(t, pc, in, v[in.src[1]].i, v[in.src[2]]);
          break;
        case Ops::CAST:
          v[in.out] = cast_num(v[in.src[0]], in.src_dtype, in.dtype);
          break;
        case Ops::BITCAST:
          v[in.out] = bitcast_num(v[in.src[0]], in.src_dtype, in.dtype);
          break;
        default: {  // the ALU ops, all validated when loading
          t.operands.resize(in.nsrc);
          for (size_t k = 0; k < in.nsrc; k++) t.operands[k] = v[in.src[k]];
          v[in.out] = exec_alu(in.op, in.dtype, in.src_dtype, t.operands);
          break;
        }
      }
      pc++;
    }
    t.pc = pc;
    return Stop::kDone;
  }

  const Region& region(int32_t buf) const {
    return buf >= kLocalBase ? locals_[size_t(buf - kLocalBase)] : regions_[size_t(buf)];
  }

  const Interpreter::Plan& p_;
  std::vector<Region> regions_;
  std::vector<Region> locals_;  // shared memory of the running workgroup, per DEFINE_LOCAL
  std::vector<std::vector<std::byte>> local_mem_;
  std::vector<Num> vars_;
};

}  // namespace

// ---------------------------------------------------------------------------------------------------

Interpreter::Interpreter(const ProgramSpec& spec) {
  auto plan = std::make_unique<Plan>();
  build_plan(spec, *plan);
  plan_ = std::move(plan);
}

Interpreter::~Interpreter() = default;

const std::string& Interpreter::name() const { return plan_->name; }

bool Interpreter::executes(Ops op) {
  return is_program_op(op) && op != Ops::VECTORIZE;  // every node kind of codegen/program.h but vectors
}

void Interpreter::run(const std::vector<InterpBuffer>& bufs, const std::vector<int64_t>& vars) const {
  Executor(*plan_, bufs, vars).run();
}

}  // namespace tg