// Names and groups of Ops.
#include "uop/ops.h"

namespace tg {

const char* op_name(Ops op) {
  static const char* const names[] = {
#define TG_OP_NAME(name) #name,
      TG_OPS(TG_OP_NAME)
#undef TG_OP_NAME
  };
  int i = static_cast<int>(op);
  return i < kNumOps ? names[i] : "?";
}

bool is_unary(Ops op) {
  switch (op) {
    case Ops::EXP2: case Ops::LOG2: case Ops::SIN: case Ops::SQRT: case Ops::RECIP: case Ops::NEG: case Ops::TRUNC:
      return true;
    default: return false;
  }
}

bool is_binary(Ops op) {
  switch (op) {
    case Ops::ADD: case Ops::MUL: case Ops::SUB: case Ops::IDIV: case Ops::MOD: case Ops::MAX: case Ops::CMPLT:
    case Ops::CMPNE: case Ops::AND: case Ops::OR: case Ops::XOR: case Ops::SHL: case Ops::SHR: case Ops::FDIV:
    case Ops::THREEFRY: case Ops::POW:
      return true;
    default: return false;
  }
}

bool is_ternary(Ops op) { return op == Ops::WHERE || op == Ops::MULACC || op == Ops::DOT4; }
bool is_alu(Ops op) { return is_unary(op) || is_binary(op) || is_ternary(op); }

bool is_commutative(Ops op) {
  switch (op) {
    case Ops::ADD: case Ops::MUL: case Ops::MAX: case Ops::CMPNE: case Ops::AND: case Ops::OR: case Ops::XOR:
      return true;
    default: return false;
  }
}

bool is_movement(Ops op) { return op >= Ops::RESHAPE && op <= Ops::FLIP; }
bool is_comparison(Ops op) { return op == Ops::CMPLT || op == Ops::CMPNE; }

bool is_zero_preserving(Ops op) {
  switch (op) {
    case Ops::ADD: case Ops::MUL: case Ops::SUB: case Ops::NEG: case Ops::SQRT: case Ops::SIN: case Ops::TRUNC:
    case Ops::MAX: case Ops::AND: case Ops::OR: case Ops::XOR: case Ops::SHL: case Ops::SHR: case Ops::CAST:
    case Ops::BITCAST: case Ops::CMPLT: case Ops::WHERE: case Ops::MULACC:
      return true;
    default: return false;  // EXP2(0)=1, LOG2(0)=-inf, RECIP(0)=inf, IDIV/MOD/FDIV by 0, CMPNE(0,0)=false but...
  }
}

}  // namespace tg
