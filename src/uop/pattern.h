#pragma once
// UPat / PatternMatcher / graph_rewrite: every pass is graph_rewrite(sink, matcher, ctx).
//
// A rule is a UPat (allowed ops, dtypes, arg or constant value, sources, named captures) and a C++
// function of the captures that returns a replacement, or nullptr for "no change". A name used twice in
// one pattern must capture the same node. Rules are indexed by op and rejected early when the node lacks
// a required source op. graph_rewrite walks with an explicit stack (no recursion), memoizes, and rewrites
// to a fixed point.
//
//   PatternMatcher pm({
//     {UPat::var("x") + UPat::cnst(0), [](const Captures& m, void*) { return m["x"]; }},  // x+0 -> x
//   });
#include <functional>
#include <optional>
#include <source_location>
#include <string>
#include <unordered_map>
#include <string_view>
#include <utility>
#include <vector>

#include "uop/uop.h"

namespace tg {

struct UPat {
  std::vector<Ops> ops;                  // allowed ops; empty: any
  std::vector<DType> dtypes;             // allowed dtypes; empty: any
  std::optional<Arg> arg;                // exact arg
  std::optional<double> const_value;     // for CONST: the value, whatever its dtype
  std::string name;                      // capture name; empty: not captured
  std::optional<std::vector<UPat>> src;  // sources in order; nullopt: any sources
  bool commutative = false;              // a 2-source list may also match swapped
  bool allow_any_len = false;            // src lists a prefix of the sources

  // Builders, in tinygrad's spelling.
  static UPat any(std::string name = "") { UPat p; p.name = std::move(name); return p; }   // UPat.var
  static UPat var(std::string name = "", std::optional<DType> dt = std::nullopt);
  static UPat cvar(std::string name = "", std::optional<DType> dt = std::nullopt);     // any CONST
  static UPat cnst(double value);                                                      // CONST == value
  static UPat op(Ops op, std::vector<UPat> src = {}, std::string name = "");
  static UPat ops_of(std::vector<Ops> ops, std::string name = "");                     // any sources
  UPat& named(std::string n) { name = std::move(n); return *this; }
  UPat dtype(DType dt) const { UPat p = *this; p.dtypes = {dt}; return p; }

  // Extra sources of the matched node, other than the listed ones, are not allowed unless allow_any_len.
};

// Commutative patterns for the common ALU ops.
UPat operator+(const UPat& a, const UPat& b);
UPat operator*(const UPat& a, const UPat& b);
UPat upat_idiv(const UPat& a, const UPat& b);
UPat upat_mod(const UPat& a, const UPat& b);
UPat upat_lt(const UPat& a, const UPat& b);

class Captures {
 public:
  const UOpPtr& operator[](std::string_view name) const;  // throws if not captured
  const UOp* get(std::string_view name) const;           // nullptr if not captured
  bool set(std::string_view name, const UOpPtr& u);      // false when the name holds another node
  void truncate(size_t n) { items_.resize(n); }
  size_t size() const { return items_.size(); }

 private:
  std::vector<std::pair<std::string_view, UOpPtr>> items_;
};

using RewriteFn = std::function<UOpPtr(const Captures&, void* ctx)>;

class PatternMatcher {
 public:
  PatternMatcher() = default;
  // `where`: where the rules are written (VIZ names a fired rule by it, its number and its pattern).
  PatternMatcher(std::vector<std::pair<UPat, RewriteFn>> rules,
                 std::source_location where = std::source_location::current());
  // One rewrite of this node: the first matching rule whose function returns a node; nullptr if none. `fired`,
  // when given, is set to that rule's index.
  UOpPtr rewrite(const UOpPtr& u, void* ctx = nullptr, size_t* fired = nullptr) const;
  PatternMatcher operator+(const PatternMatcher& other) const;
  size_t size() const { return rules_.size(); }
  // "src/uop/symbolic.cpp:131 #4 ADD(x, CONST)": the file and line of its rule list, its number there, its pattern.
  std::string describe(size_t rule) const;

 private:
  struct Rule {
    UPat pat;
    RewriteFn fn;
    std::vector<Ops> required_src_ops;  // early reject: every one must appear among the node's sources
    const char* file = "";
    unsigned line = 0;
    size_t number = 0;  // in its own list (operator+ keeps each rule's)
  };
  void index();
  std::vector<Rule> rules_;
  std::vector<std::vector<size_t>> by_op_;  // op -> rule indices, in rule order
};

// Rewrite every node below (and including) sink to a fixed point. bottom_up=true tries the rules on a
// node before its sources (tinygrad's bottom_up); the default rewrites sources first. `rewrites`, when given,
// counts the rules that fired.
UOpPtr graph_rewrite(const UOpPtr& sink, const PatternMatcher& pm, void* ctx = nullptr, bool bottom_up = false,
                     int64_t* rewrites = nullptr);
// The same, also giving every node below (and including) sink its final rewrite (tinygrad's graph_rewrite_map):
// `rewritten` maps each of sink's nodes by address (the caller keeps them alive through sink).
UOpPtr graph_rewrite_map(const UOpPtr& sink, const PatternMatcher& pm,
                         std::unordered_map<const UOp*, UOpPtr>& rewritten);
// A named pass: the same, recorded (rewrites, nodes, time) in the thread's open PassLog (uop/pass_log.h).
UOpPtr graph_rewrite(const std::string& name, const UOpPtr& sink, const PatternMatcher& pm, void* ctx = nullptr,
                     bool bottom_up = false);

// Rules of a pass with state: the state is a Ctx& (not a void*) in each rule, and graph_rewrite takes the
// TypedMatcher<Ctx> only with a Ctx, so a pass cannot be run with another pass's context.
template <class Ctx>
class TypedMatcher {
 public:
  using Fn = std::function<UOpPtr(const Captures&, Ctx&)>;
  TypedMatcher(std::vector<std::pair<UPat, Fn>> rules, std::source_location where = std::source_location::current()) {
    std::vector<std::pair<UPat, RewriteFn>> erased;
    for (auto& [pat, fn] : rules)
      erased.emplace_back(std::move(pat), [f = std::move(fn)](const Captures& m, void* ctx) { return f(m, *static_cast<Ctx*>(ctx)); });
    pm_ = PatternMatcher(std::move(erased), where);
  }
  const PatternMatcher& untyped() const { return pm_; }
  UOpPtr rewrite(const UOpPtr& u, Ctx& ctx) const { return pm_.rewrite(u, &ctx); }

 private:
  PatternMatcher pm_;
};

template <class Ctx>
UOpPtr graph_rewrite(const std::string& name, const UOpPtr& sink, const TypedMatcher<Ctx>& pm, Ctx& ctx,
                     bool bottom_up = false) {
  return graph_rewrite(name, sink, pm.untyped(), &ctx, bottom_up);
}

// Does `pat` match `u`? Captures are added to `caps` on success.
// "ADD(x, CONST)": a pattern as its ops, capture names and sources, for VIZ and errors.
std::string upat_str(const UPat& pat);
bool upat_match(const UPat& pat, const UOpPtr& u, Captures& caps);

}  // namespace tg
