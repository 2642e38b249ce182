// Device "LLVM": kernels are LLVM IR text (renderer/llvmir.h) that LLVM, loaded into this process at run time
// (runtime/llvm_api.h), optimizes and compiles to an object file without any compiler process; the process's one ORC
// JIT links the object into memory and the kernel is called through its entry as the CPU device calls its kernels.
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/cpu_launch.h"
#include "runtime/devices.h"
#include "runtime/llvm_api.h"
#include "tg/error.h"

#if defined(TG_HAVE_LLVM)
#include <cstdint>
#include <cstdlib>

#include "renderer/cpu_isa.h"
#include "renderer/llvmir.h"
#include "runtime/llvm_support.h"
#include "runtime/source_lines.h"
#include "runtime/lru_allocator.h"
#endif

namespace tg {

#if defined(TG_HAVE_LLVM)
namespace {

using llvm::Api;

// Runs `f` at the end of the scope: every LLVM object below has its own dispose function.
template <typename F>
struct Defer {
  F f;
  ~Defer() { f(); }
};
template <typename F>
Defer(F) -> Defer<F>;  // (clang before 17 deduces no aggregate's template arguments without it)

// ---- the host ----

// What LLVM compiles for: this machine's triple, and its CPU and features (-march=native) or the CPU_ISA level's
// (renderer/cpu_isa.h), found once.
struct Host {
  std::string triple, cpu, features;
  bool wide_vectors = false;  // 64-byte vectors (AVX-512): prefer_wide_vectors
  LLVMTargetRef target = nullptr;
  std::string why;  // why there is no target (then nothing else is set)
};

void find_host(Host& h) {
  if (h.why = llvm::unavailable_reason(); !h.why.empty()) return;
  const Api& a = llvm::api();
  h.triple = llvm::take_message(a.LLVMGetDefaultTargetTriple());
  char* err = nullptr;
  if (a.LLVMGetTargetFromTriple(h.triple.c_str(), &h.target, &err)) {
    h.why = "no target for " + h.triple + " in " + a.library + ": " + llvm::take_message(err);
    h.target = nullptr;
    return;
  }
  const CpuIsa& isa = cpu_isa();
  h.wide_vectors = isa.vector_bytes == 64;
  if (!isa.llvm_cpu.empty()) {
    h.cpu = isa.llvm_cpu;
    h.features = isa.llvm_features;
    return;
  }
  h.cpu = llvm::take_message(a.LLVMGetHostCPUName());
  h.features = llvm::take_message(a.LLVMGetHostCPUFeatures());
}

// Never throws.
const Host& host() {
  static std::once_flag once;
  static Host h;
  std::call_once(once, [] {
    try {
      find_host(h);
    } catch (const std::exception& e) {
      h.why = e.what();
    }
  });
  return h;
}

// ---- compiling ----

// LLVM's message, plus the source lines it points at (numbered), or the whole source when short and none is named:
// as the CPU device's explain_failure.
std::string explain(const std::string& what, const std::string& msg, const std::string& src) {
  return "LLVM: " + what + " failed:\n" + msg + quote_source_lines(msg, src, "kernel.ll");
}

std::string name_of(const Api& a, LLVMValueRef v) {
  size_t n = 0;
  const char* s = a.LLVMGetValueName2(v, &n);
  return std::string(s, n);
}

LLVMModuleRef parse(const Api& a, LLVMContextRef ctx, const std::string& src) {
  // (named kernel.ll: the name the messages give, which explain() looks for)
  LLVMMemoryBufferRef buf = a.LLVMCreateMemoryBufferWithMemoryRangeCopy(src.data(), src.size(), "kernel.ll");
  LLVMModuleRef mod = nullptr;
  char* msg = nullptr;
  if (a.LLVMParseIRInContext(ctx, buf, &mod, &msg))  // (takes the buffer, failed or not)
    throw Error(explain("parsing the kernel's IR", llvm::take_message(msg), src));
  llvm::take_message(msg);
  return mod;
}

void verify(const Api& a, LLVMModuleRef mod, const std::string& src) {
  char* msg = nullptr;
  const bool broken = a.LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg);
  std::string text = llvm::take_message(msg);
  if (broken) throw Error(explain("verifying the kernel's IR", text, src));
}

bool is_entry(const Api& a, LLVMValueRef f) {
  const std::string name = name_of(a, f);
  return !a.LLVMIsDeclaration(f) && a.LLVMGetLinkage(f) == LLVMExternalLinkage && name.size() > 6 &&
         name.compare(name.size() - 6, 6, "_entry") == 0;
}

// The one `<name>_entry` function becomes `symbol`, and every other definition internal: in the process's one JIT
// two kernels may both be called E_4_4, and only the entry of each must be found.
void name_the_entry(const Api& a, LLVMModuleRef mod, const std::string& symbol) {
  std::vector<LLVMValueRef> entries;
  for (LLVMValueRef f = a.LLVMGetFirstFunction(mod); f; f = a.LLVMGetNextFunction(f)) {
    if (is_entry(a, f))
      entries.push_back(f);
    else if (!a.LLVMIsDeclaration(f))
      a.LLVMSetLinkage(f, LLVMInternalLinkage);
  }
  for (LLVMValueRef g = a.LLVMGetFirstGlobal(mod); g; g = a.LLVMGetNextGlobal(g))
    if (!a.LLVMIsDeclaration(g) && name_of(a, g).rfind("llvm.", 0) != 0) a.LLVMSetLinkage(g, LLVMInternalLinkage);
  if (entries.size() != 1)
    throw Error("LLVM: a kernel's IR defines one external function named <kernel>_entry, this one " +
                std::to_string(entries.size()));
  a.LLVMSetValueName2(entries[0], symbol.data(), symbol.size());
}

// x86: the renderer writes 16-float vectors; without this LLVM legalizes them as two 256-bit halves on AVX-512 CPUs
// (its default for recent Xeons), doubling the instructions of every vectorized loop. The C device passes
// -mprefer-vector-width=512 for the same reason (both only where the ISA level has 64-byte vectors).
void prefer_wide_vectors(const Api& a, LLVMContextRef ctx, LLVMModuleRef mod) {
#if defined(__x86_64__) || defined(__i386__)
  static const std::string key = "prefer-vector-width", value = "512";
  for (LLVMValueRef f = a.LLVMGetFirstFunction(mod); f; f = a.LLVMGetNextFunction(f)) {
    if (a.LLVMIsDeclaration(f)) continue;
    LLVMAttributeRef attr =
        a.LLVMCreateStringAttribute(ctx, key.data(), unsigned(key.size()), value.data(), unsigned(value.size()));
    a.LLVMAddAttributeAtIndex(f, LLVMAttributeIndex(LLVMAttributeFunctionIndex), attr);
  }
#endif
}

// Code model JITDefault: LLVM picks the one the JIT can place anywhere (x86-64: large), so the object's sections and
// the process's libraries may lie any distance apart.
LLVMTargetMachineRef make_target_machine(const Api& a, const Host& h) {
  LLVMTargetMachineRef tm =
      a.LLVMCreateTargetMachine(h.target, h.triple.c_str(), h.cpu.c_str(), h.features.c_str(),
                                LLVMCodeGenLevelDefault, LLVMRelocPIC, LLVMCodeModelJITDefault);
  if (!tm) throw Error("LLVM: cannot create a target machine for " + h.triple + " (" + h.cpu + ")");
  return tm;
}

void set_target(const Api& a, LLVMModuleRef mod, LLVMTargetMachineRef tm, const Host& h) {
  a.LLVMSetTarget(mod, h.triple.c_str());
  LLVMTargetDataRef layout = a.LLVMCreateTargetDataLayout(tm);
  char* text = a.LLVMCopyStringRepOfTargetData(layout);
  a.LLVMSetDataLayout(mod, text);
  a.LLVMDisposeMessage(text);
  a.LLVMDisposeTargetData(layout);
}

// The passes a rendered kernel needs, not clang's whole -O2 (`default<O2>`): codegen already unrolled, upcast and
// vectorized it, so what is left is SSA (sroa: the allocas of accumulators and loop counters), redundancy (early-cse,
// gvn, instcombine), hoisting (licm), full unrolling of short constant loops (a conv's 5-tap window: clang -O2
// unrolls it in the C device's kernels; O3's threshold, as our IR spells more instructions per iteration), and the
// vectorizers for loops codegen left scalar. On the 21 kernels of bench/compile_time optimizing took 8.3 ms a kernel
// with default<O2> and 2.7 ms with these before the unrolling (9.0 ms a kernel in all with it). The unrolling took
// beautiful_mnist's steady step from 294-302 to 268-275 ms (CPU device 277-286: its 5x5 conv gradient had run 34%
// slower). Not taken: skipping the SLP vectorizer past 40 KB of IR and loop strength reduction cut the cold first
// step (kernels compiled one by one) from 3.85 to 2.17 s but slowed the steady step from 300 to 337 ms.
constexpr const char* kPasses =
    "always-inline,function(sroa,early-cse<memssa>,instcombine,simplifycfg,loop-mssa(licm),gvn,instcombine,"
    "loop-simplify,lcssa,loop-rotate,loop-unroll<O3;no-partial;no-runtime>,loop-vectorize,slp-vectorizer,instcombine,"
    "simplifycfg)";
void optimize(const Api& a, LLVMModuleRef mod, LLVMTargetMachineRef tm) {
  LLVMPassBuilderOptionsRef opts = a.LLVMCreatePassBuilderOptions();
  Defer dispose{[&] { a.LLVMDisposePassBuilderOptions(opts); }};
  a.LLVMPassBuilderOptionsSetLoopVectorization(opts, 1);
  a.LLVMPassBuilderOptionsSetSLPVectorization(opts, 1);
  if (LLVMErrorRef err = a.LLVMRunPasses(mod, kPasses, tm, opts))
    throw Error("LLVM: optimizing a kernel failed: " + llvm::take_error(err));
}

std::string emit_object(const Api& a, LLVMModuleRef mod, LLVMTargetMachineRef tm) {
  char* msg = nullptr;
  LLVMMemoryBufferRef out = nullptr;
  if (a.LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &msg, &out))
    throw Error("LLVM: code generation failed: " + llvm::take_message(msg));
  std::string object(a.LLVMGetBufferStart(out), a.LLVMGetBufferSize(out));
  a.LLVMDisposeMemoryBuffer(out);
  return object;
}

// Thread safe: each compile has its own LLVMContext and target machine (BEAM compiles its candidates on a pool).
class LLVMCompiler : public Compiler {
 public:
  std::string compile(const std::string& src) override {
    const Api& a = llvm::api();
    const Host& h = host();
    if (!h.why.empty()) throw Error("LLVM: " + h.why);
    LLVMContextRef ctx = a.LLVMContextCreate();
    Defer drop_ctx{[&] { a.LLVMContextDispose(ctx); }};  // (declared first: the module goes before its context)
    LLVMModuleRef mod = parse(a, ctx, src);
    Defer drop_mod{[&] { a.LLVMDisposeModule(mod); }};
    verify(a, mod, src);
    name_the_entry(a, mod, llvm::entry_symbol(src));
    if (h.wide_vectors) prefer_wide_vectors(a, ctx, mod);
    LLVMTargetMachineRef tm = make_target_machine(a, h);
    Defer drop_tm{[&] { a.LLVMDisposeTargetMachine(tm); }};
    set_target(a, mod, tm, h);
    optimize(a, mod, tm);
    return emit_object(a, mod, tm);
  }

  // A cached object from another LLVM or another CPU (its features are -march=native's) must not be reused.
  std::string cache_key() const override {
    const Host& h = host();
    return "LLVM|" + std::to_string(TG_LLVM_MAJOR) + "|" + h.triple + "|" + h.cpu + "|" + h.features + "|" +
           (h.wide_vectors ? "512|" : "") + kPasses;
  }
};

// ---- the JIT ----

// At exit, LLVM's own globals may be destroyed before the programs that static objects still hold: from then on
// a program's code is left where it is.
std::atomic<bool> g_exiting{false};

// The process's one LLJIT. Its main JITDylib resolves a kernel's calls to the process's libraries (libm's exp2f,
// memcpy ...) and to the support functions (runtime/llvm_support.h). An object is loaded once per entry symbol
// however many programs use it, and unloaded with the last of them.
class Jit {
 public:
  static Jit& get() {
    static Jit* jit = new Jit();  // lives until exit, as the devices do (a failed start is tried again)
    return *jit;
  }

  CpuEntryFn acquire(const std::string& symbol, const std::string& object, const std::string& kernel) {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = loaded_.find(symbol); it != loaded_.end()) {
      it->second.refs++;
      return it->second.entry;
    }
    LLVMOrcResourceTrackerRef rt = a_.LLVMOrcJITDylibCreateResourceTracker(main_);
    LLVMMemoryBufferRef buf =
        a_.LLVMCreateMemoryBufferWithMemoryRangeCopy(object.data(), object.size(), symbol.c_str());
    std::string why = llvm::take_error(a_.LLVMOrcLLJITAddObjectFileWithRT(jit_, rt, buf));  // (takes buf)
    LLVMOrcExecutorAddress addr = 0;
    if (why.empty()) why = llvm::take_error(a_.LLVMOrcLLJITLookup(jit_, &addr, symbol.c_str()));  // (links it)
    if (!why.empty()) {
      llvm::take_error(a_.LLVMOrcResourceTrackerRemove(rt));
      a_.LLVMOrcReleaseResourceTracker(rt);
      throw Error("LLVM: cannot load kernel " + kernel + " (entry " + symbol + "): " + why + take_reported());
    }
    take_reported();
    auto entry = reinterpret_cast<CpuEntryFn>(static_cast<uintptr_t>(addr));
    loaded_.emplace(symbol, Loaded{rt, entry, 1});
    return entry;
  }

  void release(const std::string& symbol) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = loaded_.find(symbol);
    if (it == loaded_.end() || --it->second.refs > 0) return;
    if (!g_exiting) {
      llvm::take_error(a_.LLVMOrcResourceTrackerRemove(it->second.rt));  // (a destructor's: nothing to tell)
      a_.LLVMOrcReleaseResourceTracker(it->second.rt);
    }
    loaded_.erase(it);
  }

 private:
  Jit() : a_(llvm::api()) {
    const Host& h = host();
    if (!h.why.empty()) throw Error("LLVM: " + h.why);
    if (std::string why = llvm::take_error(a_.LLVMOrcCreateLLJIT(&jit_, nullptr)); !why.empty())
      throw Error("LLVM: cannot create the JIT: " + why);
    std::atexit([] { g_exiting = true; });  // (runs before the handlers libLLVM registered as it loaded)
    // A failed link tells its lookup only "failed to materialize"; the session is told which symbol was missing.
    a_.LLVMOrcExecutionSessionSetErrorReporter(a_.LLVMOrcLLJITGetExecutionSession(jit_), report, this);
    main_ = a_.LLVMOrcLLJITGetMainJITDylib(jit_);
    LLVMOrcDefinitionGeneratorRef process = nullptr;
    const char prefix = a_.LLVMOrcLLJITGetGlobalPrefix(jit_);
    if (std::string why = llvm::take_error(
            a_.LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&process, prefix, nullptr, nullptr));
        !why.empty())
      throw Error("LLVM: cannot search this process's symbols: " + why);
    a_.LLVMOrcJITDylibAddGenerator(main_, process);  // (takes it)
    define_support_symbols();
  }

  // The support functions at their addresses in this process: libtg's symbols need not be exported for that.
  void define_support_symbols() {
    std::vector<LLVMJITCSymbolMapPair> pairs;
    for (const auto& [name, address] : llvm_support_symbols()) {
      LLVMJITEvaluatedSymbol sym{static_cast<LLVMOrcExecutorAddress>(reinterpret_cast<uintptr_t>(address)),
                                 {LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable, 0}};
      pairs.push_back({a_.LLVMOrcLLJITMangleAndIntern(jit_, name), sym});
    }
    LLVMOrcMaterializationUnitRef mu = a_.LLVMOrcAbsoluteSymbols(pairs.data(), pairs.size());  // (takes the names)
    if (LLVMErrorRef err = a_.LLVMOrcJITDylibDefine(main_, mu)) {
      a_.LLVMOrcDisposeMaterializationUnit(mu);  // (still ours when the definition failed)
      throw Error("LLVM: cannot define the kernels' support functions: " + llvm::take_error(err));
    }
  }

  static void report(void* self, LLVMErrorRef err) {
    Jit& jit = *static_cast<Jit*>(self);
    std::string msg = llvm::take_error(err);
    std::lock_guard<std::mutex> lock(jit.report_mu_);
    jit.reported_ += (jit.reported_.empty() ? "" : "; ") + msg;
  }
  std::string take_reported() {
    std::lock_guard<std::mutex> lock(report_mu_);
    std::string s = reported_.empty() ? "" : " (" + reported_ + ")";
    reported_.clear();
    return s;
  }

  struct Loaded {
    LLVMOrcResourceTrackerRef rt;
    CpuEntryFn entry;
    int refs;
  };
  const Api& a_;
  LLVMOrcLLJITRef jit_ = nullptr;
  LLVMOrcJITDylibRef main_ = nullptr;
  std::mutex mu_;  // loads and unloads, one at a time
  std::map<std::string, Loaded> loaded_;
  std::mutex report_mu_;
  std::string reported_;  // what the session reported since the last load
};

// ---- running ----

// Runs as the CPU device's programs do (runtime/cpu_launch.h); the code is the JIT's, shared by every program of the
// same source (the entry symbol is the source's hash).
class LLVMProgram : public Program {
 public:
  LLVMProgram(const ProgramSpec& spec, const std::string& binary)
      : runner_("LLVM", spec), symbol_(llvm::entry_symbol(spec.src)), jit_(Jit::get()) {
    if (binary.empty()) throw Error("LLVM: empty binary for kernel " + spec.name + " (was it compiled for NULL?)");
    runner_.set_entry(jit_.acquire(symbol_, binary, spec.name));
  }
  ~LLVMProgram() override { jit_.release(symbol_); }
  double run(const std::vector<void*>& bufs, const std::vector<int64_t>& vars, bool wait) override {
    return runner_.run(bufs, vars, wait);
  }

 private:
  CpuEntryRunner runner_;
  std::string symbol_;
  Jit& jit_;
};

class LLVMDevice : public Device {
 public:
  LLVMDevice() {
    name_ = "LLVM";
    allocator_ = std::make_unique<LRUAllocator>(make_malloc_allocator());
    compiler_ = std::make_unique<LLVMCompiler>();
    renderer_ = std::make_unique<LLVMRenderer>(TG_LLVM_MAJOR >= 15);
  }
  std::unique_ptr<Program> load(const ProgramSpec& spec, const std::string& binary) override {
    return std::make_unique<LLVMProgram>(spec, binary);
  }
};

}  // namespace

int llvm_device_count(std::string* why) {
  const Host& h = host();
  if (why) *why = h.why;
  return h.why.empty() ? 1 : 0;
}

std::unique_ptr<Device> make_llvm_device(int index) {
  std::string why;
  if (llvm_device_count(&why) == 0) throw Error("LLVM: " + why);
  return std::make_unique<LLVMDevice>();
}

#else  // built without LLVM: the device is known and absent, saying why

int llvm_device_count(std::string* why) {
  if (why) *why = llvm::unavailable_reason();
  return 0;
}

std::unique_ptr<Device> make_llvm_device(int index) { throw Error("LLVM: " + llvm::unavailable_reason()); }

#endif

}  // namespace tg
