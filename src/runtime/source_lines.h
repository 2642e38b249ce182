#pragma once
// Compile errors that show the source they complain about: the lines a compiler's log names as `<file>:<line>:`,
// numbered, so an error is readable without digging up the generated file. Shared by the CPU device (C through a
// compiler process) and the LLVM device (IR through libLLVM).
#include <string>

namespace tg {

// "\n  12 | <line 12>" for each line of `src` that `log` names as `file`:12: (the first 10), or "\nsource:\n" + src
// when none is named and the source is short (40 lines); "" otherwise.
std::string quote_source_lines(const std::string& log, const std::string& src, const std::string& file);

}  // namespace tg
