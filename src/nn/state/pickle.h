#pragma once
// A pickle interpreter (protocols 2 to 5, the binary opcodes) that builds plain objects and never runs
// code: GLOBAL names a callable, and REDUCE / NEWOBJ / BUILD / persistent ids go to hooks, which decide
// what each means (torch_load turns torch's rebuild functions into tensors). Objects live in an arena
// owned by the Unpickler, so reference cycles a corrupt file may build cost nothing; their number is
// bounded by the input size.
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

namespace tg::nn::state {

struct PyObj {
  enum class Kind : uint8_t { None, Bool, Int, Float, Str, Bytes, Tuple, List, Dict, Global, Object, Ext };
  Kind kind = Kind::None;
  bool big = false;           // Int: does not fit int64_t (value unusable)
  int64_t i = 0;              // Int and Bool; Ext: the hooks' own index
  double f = 0;               // Float
  std::string s;              // Str, Bytes; Global: the module; Ext: the hooks' own tag
  std::string name;           // Global: the name in the module
  std::vector<PyObj*> items;  // Tuple, List; Dict: key, value, key, value ...; Object: its args
  PyObj* type = nullptr;      // Object: the callable that made it

  bool is_global(const char* module, const char* nm) const { return kind == Kind::Global && s == module && name == nm; }
  static const char* kind_name(Kind k);
};

class Unpickler;

class PickleHooks {
 public:
  virtual ~PickleHooks() = default;
  // BINPERSID.
  virtual PyObj* persistent_load(Unpickler& u, PyObj* pid) = 0;
  // REDUCE and NEWOBJ: callable(*args). The default makes an opaque Object (as tinygrad's Dummy).
  virtual PyObj* call(Unpickler& u, PyObj* callable, PyObj* args);
  // BUILD: obj.__setstate__(state). The default ignores the state.
  virtual void build(Unpickler& u, PyObj* obj, PyObj* state) {}
};

class Unpickler {
 public:
  Unpickler(const uint8_t* data, size_t size, const char* who, std::string where, PickleHooks& hooks)
      : data_(data), size_(size), who_(who), where_(std::move(where)), hooks_(hooks) {}
  PyObj* load();  // runs to STOP; the result lives as long as this Unpickler
  PyObj* make(PyObj::Kind k);
  [[noreturn]] void fail(const std::string& what) const;  // "<who>: <where>: pickle: <what> at byte N"

 private:
  PyObj* pop();
  PyObj* top();
  std::vector<PyObj*> pop_mark();
  PyObj* make_str(PyObj::Kind k, uint64_t n);
  std::string line();  // text argument of GLOBAL, up to '\n'
  void need(size_t n) const;  // fails unless n more bytes follow
  uint64_t le(size_t n);       // an n-byte little-endian argument
  void push(PyObj* o) { stack_.push_back(o); }
  void push_int(int64_t v);
  void push_tuple(std::vector<PyObj*> items);
  void push_long(uint64_t n);  // LONG1/LONG4: n bytes of little-endian two's complement
  void push_memo(uint64_t idx);
  void add_items(PyObj* target, const std::vector<PyObj*>& items, bool dict);  // APPEND(S), SETITEM(S)
  // The opcodes by kind, each false where `op` is not one of its kind: building tuples, lists and dicts; the memo,
  // globals and calls; numbers, strings and the stack itself.
  bool container_op(uint8_t op);
  bool object_op(uint8_t op);
  bool scalar_op(uint8_t op);

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0, op_pos_ = 0;
  const char* who_;
  std::string where_;
  PickleHooks& hooks_;
  std::deque<PyObj> arena_;
  std::vector<PyObj*> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, PyObj*> memo_;
};

}  // namespace tg::nn::state
