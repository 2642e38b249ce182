#pragma once
// The one check of a linearized program (codegen/program.h) that every consumer trusts: the engine runs it on
// each kernel after linearize, before any renderer sees it, and the interpreter device runs it on every program
// it loads. A program that passes has: every node once, after its sources, inside the loops and IFs that define
// them; blocks closed innermost first; only the node kinds of program.h, each with its sources' count, dtypes and
// args as listed there (vectors too: lanes match, a vector load or store moves its buffer's element dtype);
// distinct parameter numbers; and a launch whose sizes are exactly what its SPECIALs span.
#include "codegen/program.h"

namespace tg {

// Whether op is a node kind of a linearized program (codegen/program.h).
bool is_program_op(Ops op);

// Throws tg::Error "kernel 'NAME': uop N (OP dtype) why" at the first rule broken.
void verify_program(const ProgramSpec& spec);

}  // namespace tg
