#pragma once
// Symbolic simplification of integer index math (and constant folding of every ALU op), using the
// vmin/vmax ranges of the nodes: x+0, x*1, x*0, (x*c)//c, (a*c+b)//c with 0<=b<c, mod folding, like-term
// combining, comparisons decided by range, WHERE with a decided condition. The quality of generated
// code is mostly the quality of these rules.
#include "uop/pattern.h"

namespace tg {

const PatternMatcher& symbolic();  // the rules
UOpPtr simplify(const UOpPtr& u);  // graph_rewrite(u, symbolic())

}  // namespace tg
