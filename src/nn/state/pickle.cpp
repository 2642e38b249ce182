// The pickle interpreter: a loop over opcodes (one handler per kind of opcode), a value stack, a mark stack and a
// memo.
#include "nn/state/pickle.h"

#include <cstdio>
#include <cstring>

#include "tg/error.h"

namespace tg::nn::state {
namespace {

// The opcodes understood (pickletools' names); the text-based protocol-0 ones are not.
enum Opcode : uint8_t {
  MARK = '(',
  STOP = '.',
  POP = '0',
  POP_MARK = '1',
  DUP = '2',
  BINFLOAT = 'G',
  BININT = 'J',
  BININT1 = 'K',
  BININT2 = 'M',
  NONE = 'N',
  BINPERSID = 'Q',
  REDUCE = 'R',
  BINSTRING = 'T',
  SHORT_BINSTRING = 'U',
  BINUNICODE = 'X',
  APPEND = 'a',
  BUILD = 'b',
  GLOBAL = 'c',
  DICT = 'd',
  EMPTY_DICT = '}',
  APPENDS = 'e',
  BINGET = 'h',
  LONG_BINGET = 'j',
  LIST = 'l',
  EMPTY_LIST = ']',
  BINPUT = 'q',
  LONG_BINPUT = 'r',
  SETITEM = 's',
  TUPLE = 't',
  EMPTY_TUPLE = ')',
  SETITEMS = 'u',
  BINBYTES = 'B',
  SHORT_BINBYTES = 'C',
  PROTO = 0x80,
  NEWOBJ = 0x81,
  TUPLE1 = 0x85,
  TUPLE2 = 0x86,
  TUPLE3 = 0x87,
  NEWTRUE = 0x88,
  NEWFALSE = 0x89,
  LONG1 = 0x8a,
  LONG4 = 0x8b,
  SHORT_BINUNICODE = 0x8c,
  BINUNICODE8 = 0x8d,
  BINBYTES8 = 0x8e,
  EMPTY_SET = 0x8f,
  ADDITEMS = 0x90,
  FROZENSET = 0x91,
  NEWOBJ_EX = 0x92,
  STACK_GLOBAL = 0x93,
  MEMOIZE = 0x94,
  FRAME = 0x95
};

}  // namespace

const char* PyObj::kind_name(Kind k) {
  static const char* names[] = {"None",  "bool", "int",  "float",  "str",    "bytes",
                                "tuple", "list", "dict", "global", "object", "object"};
  return names[size_t(k)];
}

PyObj* PickleHooks::call(Unpickler& u, PyObj* callable, PyObj* args) {
  PyObj* o = u.make(PyObj::Kind::Object);
  o->type = callable;
  if (args->kind == PyObj::Kind::Tuple) o->items = args->items;
  return o;
}

void Unpickler::fail(const std::string& what) const {
  throw Error(std::string(who_) + ": " + where_ + ": pickle: " + what + " at byte " + std::to_string(op_pos_));
}

PyObj* Unpickler::make(PyObj::Kind k) {
  // Each opcode makes at most a couple of objects, so the input size bounds this; the cap is a backstop.
  if (arena_.size() >= (size_t(1) << 26)) fail("too many objects");
  arena_.emplace_back();
  arena_.back().kind = k;
  return &arena_.back();
}

PyObj* Unpickler::pop() {
  if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) fail("stack underflow");
  PyObj* o = stack_.back();
  stack_.pop_back();
  return o;
}

PyObj* Unpickler::top() {
  if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) fail("stack underflow");
  return stack_.back();
}

std::vector<PyObj*> Unpickler::pop_mark() {
  if (marks_.empty()) fail("no MARK on the stack");
  size_t m = marks_.back();
  marks_.pop_back();
  std::vector<PyObj*> items(stack_.begin() + std::ptrdiff_t(m), stack_.end());
  stack_.resize(m);
  return items;
}

PyObj* Unpickler::make_str(PyObj::Kind k, uint64_t n) {
  if (n > size_ - pos_) fail("truncated: a string of " + std::to_string(n) + " bytes runs past the end");
  PyObj* o = make(k);
  o->s.assign(reinterpret_cast<const char*>(data_ + pos_), size_t(n));
  pos_ += size_t(n);
  return o;
}

std::string Unpickler::line() {
  const void* nl = std::memchr(data_ + pos_, '\n', std::min<size_t>(size_ - pos_, 4096));
  if (!nl) fail("GLOBAL name without a newline within 4096 bytes");
  size_t n = size_t(static_cast<const uint8_t*>(nl) - (data_ + pos_));
  std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
  pos_ += n + 1;
  return s;
}

void Unpickler::need(size_t n) const {
  if (n > size_ - pos_) fail("truncated: opcode argument needs " + std::to_string(n) + " bytes");
}

uint64_t Unpickler::le(size_t n) {
  need(n);
  uint64_t v = 0;
  for (size_t k = n; k-- > 0;) v = (v << 8) | data_[pos_ + k];
  pos_ += n;
  return v;
}

void Unpickler::push_int(int64_t v) {
  PyObj* o = make(PyObj::Kind::Int);
  o->i = v;
  push(o);
}

void Unpickler::push_tuple(std::vector<PyObj*> items) {
  PyObj* t = make(PyObj::Kind::Tuple);
  t->items = std::move(items);
  push(t);
}

void Unpickler::push_long(uint64_t n) {
  if (n > size_ - pos_) fail("truncated: a LONG of " + std::to_string(n) + " bytes runs past the end");
  PyObj* o = make(PyObj::Kind::Int);
  if (n > 8) {
    o->big = true;  // kept as a marker: no tensor metadata needs such a number
    pos_ += size_t(n);
  } else if (n > 0) {
    uint64_t v = le(size_t(n));
    if (n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t(0) << (8 * n);  // sign-extend
    o->i = int64_t(v);
  }
  push(o);
}

void Unpickler::push_memo(uint64_t idx) {
  auto it = memo_.find(idx);
  if (it == memo_.end()) fail("memo key " + std::to_string(idx) + " was never stored");
  push(it->second);
}

void Unpickler::add_items(PyObj* target, const std::vector<PyObj*>& items, bool dict) {
  if (dict) {
    if (target->kind != PyObj::Kind::Dict) fail("SETITEM(S) on a " + std::string(PyObj::kind_name(target->kind)));
    if (items.size() % 2) fail("SETITEMS with an odd number of items");
  } else if (target->kind != PyObj::Kind::List) {
    fail("APPEND(S) on a " + std::string(PyObj::kind_name(target->kind)));
  }
  target->items.insert(target->items.end(), items.begin(), items.end());
}

PyObj* Unpickler::load() {
  while (true) {
    op_pos_ = pos_;
    if (pos_ >= size_) fail("truncated: no STOP opcode");
    const uint8_t op = data_[pos_++];
    if (op == STOP) return pop();
    if (container_op(op) || object_op(op) || scalar_op(op)) continue;
    char hex[8];
    std::snprintf(hex, sizeof(hex), "0x%02x", op);
    fail(std::string("unsupported opcode ") + hex);
  }
}

bool Unpickler::container_op(uint8_t op) {
  using K = PyObj::Kind;
  switch (op) {
    case MARK: marks_.push_back(stack_.size()); return true;
    case EMPTY_TUPLE: push_tuple({}); return true;
    case EMPTY_LIST: push(make(K::List)); return true;
    case EMPTY_DICT: push(make(K::Dict)); return true;
    case EMPTY_SET: push(make(K::List)); return true;  // sets are kept as lists
    case TUPLE: push_tuple(pop_mark()); return true;
    case TUPLE1: push_tuple({pop()}); return true;
    case TUPLE2: {
      PyObj* b = pop();
      push_tuple({pop(), b});
      return true;
    }
    case TUPLE3: {
      PyObj* c = pop();
      PyObj* b = pop();
      push_tuple({pop(), b, c});
      return true;
    }
    case LIST:
    case FROZENSET: {
      PyObj* l = make(K::List);
      l->items = pop_mark();
      push(l);
      return true;
    }
    case DICT: {
      PyObj* d = make(K::Dict);
      add_items(d, pop_mark(), true);
      push(d);
      return true;
    }
    case APPEND: {
      PyObj* v = pop();
      add_items(top(), {v}, false);
      return true;
    }
    case APPENDS:
    case ADDITEMS: {
      std::vector<PyObj*> items = pop_mark();
      add_items(top(), items, false);
      return true;
    }
    case SETITEM: {
      PyObj* v = pop();
      PyObj* k = pop();
      add_items(top(), {k, v}, true);
      return true;
    }
    case SETITEMS: {
      std::vector<PyObj*> items = pop_mark();
      add_items(top(), items, true);
      return true;
    }
    default: return false;
  }
}

bool Unpickler::object_op(uint8_t op) {
  using K = PyObj::Kind;
  switch (op) {
    case BINPUT: memo_[le(1)] = top(); return true;
    case LONG_BINPUT: memo_[le(4)] = top(); return true;
    case MEMOIZE: memo_[memo_.size()] = top(); return true;
    case BINGET: push_memo(le(1)); return true;
    case LONG_BINGET: push_memo(le(4)); return true;
    case GLOBAL: {
      PyObj* g = make(K::Global);
      g->s = line();
      g->name = line();
      push(g);
      return true;
    }
    case STACK_GLOBAL: {
      PyObj* name = pop();
      PyObj* mod = pop();
      if (name->kind != K::Str || mod->kind != K::Str) fail("STACK_GLOBAL needs two strings");
      PyObj* g = make(K::Global);
      g->s = mod->s;
      g->name = name->s;
      push(g);
      return true;
    }
    case REDUCE:
    case NEWOBJ:
    case NEWOBJ_EX: {
      if (op == NEWOBJ_EX) pop();  // kwargs
      PyObj* args = pop();
      PyObj* callable = pop();
      if (args->kind != K::Tuple) fail("call arguments are a " + std::string(PyObj::kind_name(args->kind)));
      push(hooks_.call(*this, callable, args));
      return true;
    }
    case BUILD: {
      PyObj* state = pop();
      hooks_.build(*this, top(), state);
      return true;
    }
    case BINPERSID: {
      PyObj* pid = pop();
      push(hooks_.persistent_load(*this, pid));
      return true;
    }
    default: return false;
  }
}

bool Unpickler::scalar_op(uint8_t op) {
  using K = PyObj::Kind;
  switch (op) {
    case PROTO:
      if (le(1) > 5) fail("unsupported pickle protocol");
      return true;
    case FRAME: le(8); return true;  // only a size hint
    case BININT: push_int(int32_t(uint32_t(le(4)))); return true;
    case BININT1: push_int(int64_t(le(1))); return true;
    case BININT2: push_int(int64_t(le(2))); return true;
    case LONG1: push_long(le(1)); return true;
    case LONG4: push_long(le(4)); return true;
    case NONE: push(make(K::None)); return true;
    case NEWTRUE:
    case NEWFALSE: {
      PyObj* b = make(K::Bool);
      b->i = op == NEWTRUE;
      push(b);
      return true;
    }
    case BINFLOAT: {  // big-endian
      need(8);
      uint64_t bits = 0;
      for (int k = 0; k < 8; k++) bits = (bits << 8) | data_[pos_ + size_t(k)];
      pos_ += 8;
      PyObj* o = make(K::Float);
      std::memcpy(&o->f, &bits, 8);
      push(o);
      return true;
    }
    case BINUNICODE: push(make_str(K::Str, le(4))); return true;
    case SHORT_BINUNICODE: push(make_str(K::Str, le(1))); return true;
    case BINUNICODE8: push(make_str(K::Str, le(8))); return true;
    case SHORT_BINSTRING: push(make_str(K::Str, le(1))); return true;
    case BINSTRING: {
      auto n = int32_t(uint32_t(le(4)));
      if (n < 0) fail("negative BINSTRING length");
      push(make_str(K::Str, uint64_t(n)));
      return true;
    }
    case SHORT_BINBYTES: push(make_str(K::Bytes, le(1))); return true;
    case BINBYTES: push(make_str(K::Bytes, le(4))); return true;
    case BINBYTES8: push(make_str(K::Bytes, le(8))); return true;
    case POP: pop(); return true;
    case POP_MARK: pop_mark(); return true;
    case DUP: push(top()); return true;
    default: return false;
  }
}

}  // namespace tg::nn::state
