#pragma once
// LLVM's C API, loaded at run time: libLLVM-<major>.so is opened with dlopen on the LLVM device's first use, not
// linked, because loading it costs a process ~10 ms and ~50 MB that programs which never use the device should not
// pay. The build only needs the llvm-c headers (Debian: llvm-14-dev), for the functions' types: every entry point
// below is declared as decltype(&LLVMName) and resolved by dlsym.
//
// The first part of this header is there in every build (tests use it); the Api itself only where CMake found LLVM
// (TG_HAVE_LLVM, a private definition of libtg, as is the include path of the llvm-c headers).
#include <string>

namespace tg::llvm {

// The LLVM major version whose headers this library was built with; 0 when built without LLVM.
int built_major();
// Whether the IR this build's LLVM reads spells pointers "ptr" (LLVM >= 15) rather than typed ("float*").
inline bool opaque_pointers() { return built_major() >= 15; }
// The name the LLVM compiler gives a kernel's entry function: "tg_" and 16 hex digits of a 64-bit FNV-1a hash of
// its source, so that kernels sharing a name (two E_4_4 with different bodies) stay distinct in the process's one JIT.
std::string entry_symbol(const std::string& src);
// Why LLVM's C API cannot be used here ("built without LLVM", no libLLVM, a missing entry point, no target for this
// architecture); empty when it can. Loads the library on first use; never throws.
std::string unavailable_reason();

}  // namespace tg::llvm

#if defined(TG_HAVE_LLVM)
#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

// Every entry point the LLVM device uses, by its C name.
#define TG_LLVM_FUNCTIONS(X)                              \
  /* contexts, modules, memory buffers, messages */       \
  X(LLVMContextCreate)                                    \
  X(LLVMContextDispose)                                   \
  X(LLVMCreateMemoryBufferWithMemoryRangeCopy)            \
  X(LLVMGetBufferStart)                                   \
  X(LLVMGetBufferSize)                                    \
  X(LLVMDisposeMemoryBuffer)                              \
  X(LLVMDisposeMessage)                                   \
  X(LLVMParseIRInContext)                                 \
  X(LLVMVerifyModule)                                     \
  X(LLVMDisposeModule)                                    \
  X(LLVMSetTarget)                                        \
  X(LLVMSetDataLayout)                                    \
  /* the module's functions and globals */                \
  X(LLVMGetFirstFunction)                                 \
  X(LLVMGetNextFunction)                                  \
  X(LLVMGetFirstGlobal)                                   \
  X(LLVMGetNextGlobal)                                    \
  X(LLVMIsDeclaration)                                    \
  X(LLVMGetLinkage)                                       \
  X(LLVMSetLinkage)                                       \
  X(LLVMGetValueName2)                                    \
  X(LLVMSetValueName2)                                    \
  X(LLVMCreateStringAttribute)                            \
  X(LLVMAddAttributeAtIndex)                              \
  /* the host's target machine */                         \
  X(LLVMGetDefaultTargetTriple)                           \
  X(LLVMGetHostCPUName)                                   \
  X(LLVMGetHostCPUFeatures)                               \
  X(LLVMGetTargetFromTriple)                              \
  X(LLVMCreateTargetMachine)                              \
  X(LLVMDisposeTargetMachine)                             \
  X(LLVMCreateTargetDataLayout)                           \
  X(LLVMCopyStringRepOfTargetData)                        \
  X(LLVMDisposeTargetData)                                \
  X(LLVMTargetMachineEmitToMemoryBuffer)                  \
  /* the optimizer (new pass manager) */                  \
  X(LLVMCreatePassBuilderOptions)                         \
  X(LLVMPassBuilderOptionsSetLoopVectorization)           \
  X(LLVMPassBuilderOptionsSetSLPVectorization)            \
  X(LLVMDisposePassBuilderOptions)                        \
  X(LLVMRunPasses)                                        \
  /* errors */                                            \
  X(LLVMGetErrorMessage)                                  \
  X(LLVMDisposeErrorMessage)                              \
  /* the ORC JIT */                                       \
  X(LLVMOrcCreateLLJIT)                                   \
  X(LLVMOrcLLJITGetMainJITDylib)                          \
  X(LLVMOrcLLJITGetExecutionSession)                      \
  X(LLVMOrcExecutionSessionSetErrorReporter)              \
  X(LLVMOrcLLJITGetGlobalPrefix)                          \
  X(LLVMOrcLLJITMangleAndIntern)                          \
  X(LLVMOrcLLJITAddObjectFileWithRT)                      \
  X(LLVMOrcLLJITLookup)                                   \
  X(LLVMOrcAbsoluteSymbols)                               \
  X(LLVMOrcDisposeMaterializationUnit)                    \
  X(LLVMOrcJITDylibDefine)                                \
  X(LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess) \
  X(LLVMOrcJITDylibAddGenerator)                          \
  X(LLVMOrcJITDylibCreateResourceTracker)                 \
  X(LLVMOrcResourceTrackerRemove)                         \
  X(LLVMOrcReleaseResourceTracker)

namespace tg::llvm {

struct Api {
#define TG_LLVM_DECLARE(name) decltype(&::name) name = nullptr;
  TG_LLVM_FUNCTIONS(TG_LLVM_DECLARE)
#undef TG_LLVM_DECLARE
  std::string library;  // the file that was opened
};

// The API, loaded once per process, with the host's target (LLVMInitializeNativeTarget and its asm printer: in
// llvm-c/Target.h those are static inline functions calling LLVMInitialize<Arch>Target..., which are loaded by name).
// Throws tg::Error("LLVM: ...") saying why it cannot be used here: no libLLVM, a missing entry point, or no
// target for this architecture.
const Api& api();

// The text of an LLVMErrorRef (which it consumes); "" for no error.
std::string take_error(LLVMErrorRef err);
// The text of a message LLVM allocated (which it disposes); "" for null.
std::string take_message(char* msg);

}  // namespace tg::llvm
#endif
