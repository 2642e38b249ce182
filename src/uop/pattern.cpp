// UPat matching, the op-indexed PatternMatcher, and the iterative graph_rewrite.
#include "uop/pattern.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <unordered_map>

#include "tg/error.h"
#include "uop/pass_log.h"
#include "uop/viz_trace.h"

namespace tg {

// ---- UPat builders ----
UPat UPat::var(std::string name, std::optional<DType> dt) {
  UPat p;
  p.name = std::move(name);
  if (dt) p.dtypes = {*dt};
  return p;
}
UPat UPat::cvar(std::string name, std::optional<DType> dt) {
  UPat p = var(std::move(name), dt);
  p.ops = {Ops::CONST};
  return p;
}
UPat UPat::cnst(double value) {
  UPat p;
  p.ops = {Ops::CONST};
  p.const_value = value;
  return p;
}
UPat UPat::op(Ops op, std::vector<UPat> src, std::string name) {
  UPat p;
  p.ops = {op};
  p.src = std::move(src);
  p.name = std::move(name);
  return p;
}
UPat UPat::ops_of(std::vector<Ops> ops, std::string name) {
  UPat p;
  p.ops = std::move(ops);
  p.name = std::move(name);
  return p;
}

namespace {
UPat binary(Ops op, const UPat& a, const UPat& b, bool commutative) {
  UPat p = UPat::op(op, {a, b});
  p.commutative = commutative;
  return p;
}
}  // namespace
UPat operator+(const UPat& a, const UPat& b) { return binary(Ops::ADD, a, b, true); }
UPat operator*(const UPat& a, const UPat& b) { return binary(Ops::MUL, a, b, true); }
UPat upat_idiv(const UPat& a, const UPat& b) { return binary(Ops::IDIV, a, b, false); }
UPat upat_mod(const UPat& a, const UPat& b) { return binary(Ops::MOD, a, b, false); }
UPat upat_lt(const UPat& a, const UPat& b) { return binary(Ops::CMPLT, a, b, false); }

// ---- Captures ----
const UOpPtr& Captures::operator[](std::string_view name) const {
  for (auto& [k, v] : items_)
    if (k == name) return v;
  throw Error("pattern: no capture named '" + std::string(name) + "'");
}
const UOp* Captures::get(std::string_view name) const {
  for (auto& [k, v] : items_)
    if (k == name) return v.get();
  return nullptr;
}
bool Captures::set(std::string_view name, const UOpPtr& u) {
  if (const UOp* old = get(name)) return old == u.get();
  items_.emplace_back(name, u);
  return true;
}

// ---- matching ----
namespace {
// Captures keep views of the pattern's names, so patterns are matched in place, never copied.
bool match_sources(const std::vector<UPat>& pats, const std::vector<UOpPtr>& src, bool swapped, Captures& caps) {
  for (size_t i = 0; i < pats.size(); i++)
    if (!upat_match(pats[swapped ? pats.size() - 1 - i : i], src[i], caps)) return false;
  return true;
}
}  // namespace

bool upat_match(const UPat& p, const UOpPtr& u, Captures& caps) {
  if (!p.ops.empty() && std::find(p.ops.begin(), p.ops.end(), u->op) == p.ops.end()) return false;
  if (!p.dtypes.empty() && std::find(p.dtypes.begin(), p.dtypes.end(), u->dtype) == p.dtypes.end()) return false;
  if (p.arg && !(*p.arg == u->arg)) return false;
  if (p.const_value && (u->op != Ops::CONST || u->const_value() != *p.const_value)) return false;
  size_t mark = caps.size();
  if (!p.name.empty() && !caps.set(p.name, u)) return false;
  if (!p.src) return true;
  const auto& pats = *p.src;
  bool len_ok = p.allow_any_len ? u->src.size() >= pats.size() : u->src.size() == pats.size();
  if (!len_ok) {
    caps.truncate(mark);
    return false;
  }
  size_t inner = caps.size();
  if (match_sources(pats, u->src, false, caps)) return true;
  caps.truncate(inner);
  if (p.commutative && pats.size() == 2 && match_sources(pats, u->src, true, caps)) return true;
  caps.truncate(mark);
  return false;
}

// ---- PatternMatcher ----
PatternMatcher::PatternMatcher(std::vector<std::pair<UPat, RewriteFn>> rules, std::source_location where) {
  for (auto& [pat, fn] : rules)
    rules_.push_back(Rule{std::move(pat), std::move(fn), {}, where.file_name(), where.line(), rules_.size()});
  index();
}

std::string upat_str(const UPat& p) {
  std::string out;
  for (size_t i = 0; i < p.ops.size() && i < 3; i++) out += (i ? "|" : "") + std::string(op_name(p.ops[i]));
  if (p.ops.size() > 3) out += "|...";
  if (p.const_value) {
    char v[32];
    std::snprintf(v, sizeof v, "%g", *p.const_value);
    out += (out.empty() ? "CONST " : " ") + std::string(v);
  }
  if (!p.name.empty()) out += (out.empty() ? "" : ":") + p.name;
  if (out.empty()) out = "_";
  if (p.src) {
    out += "(";
    for (size_t i = 0; i < p.src->size(); i++) out += (i ? ", " : "") + upat_str((*p.src)[i]);
    out += p.allow_any_len ? ", ...)" : ")";
  }
  return out;
}

std::string PatternMatcher::describe(size_t rule) const {
  const Rule& r = rules_.at(rule);
  std::string file = r.file;
  if (size_t at = file.rfind("/src/"); at != std::string::npos) file = file.substr(at + 1);
  return file + ":" + std::to_string(r.line) + " #" + std::to_string(r.number) + " " + upat_str(r.pat);
}

void PatternMatcher::index() {
  by_op_.assign(kNumOps, {});
  for (size_t i = 0; i < rules_.size(); i++) {
    Rule& r = rules_[i];
    r.required_src_ops.clear();
    if (r.pat.src)
      for (auto& s : *r.pat.src)
        if (s.ops.size() == 1) r.required_src_ops.push_back(s.ops[0]);
    if (r.pat.ops.empty())
      for (int op = 0; op < kNumOps; op++) by_op_[op].push_back(i);
    else
      for (Ops op : r.pat.ops) by_op_[int(op)].push_back(i);
  }
}

PatternMatcher PatternMatcher::operator+(const PatternMatcher& other) const {
  PatternMatcher pm;
  pm.rules_ = rules_;
  pm.rules_.insert(pm.rules_.end(), other.rules_.begin(), other.rules_.end());
  pm.index();
  return pm;
}

UOpPtr PatternMatcher::rewrite(const UOpPtr& u, void* ctx, size_t* fired) const {
  if (by_op_.empty()) return nullptr;
  for (size_t i : by_op_[int(u->op)]) {
    const Rule& r = rules_[i];
    bool rejected = false;
    for (Ops need : r.required_src_ops) {
      bool found = false;
      for (auto& s : u->src) found |= s->op == need;
      if (!found) { rejected = true; break; }
    }
    if (rejected) continue;
    Captures caps;
    if (!upat_match(r.pat, u, caps)) continue;
    if (UOpPtr out = r.fn(caps, ctx); out && out != u) {
      if (fired) *fired = i;
      return out;
    }
  }
  return nullptr;
}

// ---- graph_rewrite ----
namespace {
struct Rewriter {
  const PatternMatcher& pm;
  void* ctx;
  bool bottom_up;
  int64_t rewrites = 0;
  std::unordered_map<const UOp*, UOpPtr> done;  // node -> its final rewrite
  std::vector<UOpPtr> keep;                      // keys stay alive so addresses are not reused
  std::vector<int64_t>* fired = nullptr;         // (VIZ) how often each rule fired
  std::vector<viz::RewriteMatch>* matches = nullptr;  // (VIZ) the first rewrites, rule by pm's index

  UOpPtr try_rules(const UOpPtr& n) {
    if (!fired) return pm.rewrite(n, ctx);
    size_t rule = 0;
    UOpPtr r = pm.rewrite(n, ctx, &rule);
    if (!r) return r;
    (*fired)[rule]++;
    if (matches->size() < viz::kMaxMatches) matches->push_back({rule, n, r});
    return r;
  }

  void finish(const UOpPtr& u, UOpPtr result) {
    if (result != u) keep.push_back(u);  // an unchanged node is kept alive by its own entry
    done[u.get()] = std::move(result);
  }

  UOpPtr run(const UOpPtr& root) {
    // Frames: 0 = first visit, 1 = sources are done, 2 = waiting for the rewrite of `alt`.
    struct Frame {
      UOpPtr node;
      int stage;
      UOpPtr alt;
    };
    std::vector<Frame> stack{{root, 0, nullptr}};
    while (!stack.empty()) {
      Frame f = std::move(stack.back());
      stack.pop_back();
      if (f.stage == 0) {
        if (done.count(f.node.get())) continue;
        if (bottom_up) {
          if (UOpPtr r = try_rules(f.node)) {
            rewrites++;
            stack.push_back({f.node, 2, r});
            if (!done.count(r.get())) stack.push_back({r, 0, nullptr});
            continue;
          }
        }
        stack.push_back({f.node, 1, nullptr});
        for (auto it = f.node->src.rbegin(); it != f.node->src.rend(); ++it)
          if (!done.count(it->get())) stack.push_back({*it, 0, nullptr});
      } else if (f.stage == 1) {
        if (done.count(f.node.get())) continue;
        bool changed = false;
        for (auto& s : f.node->src) changed |= done.at(s.get()) != s;
        UOpPtr n = f.node;
        if (changed) {
          std::vector<UOpPtr> srcs;
          for (auto& s : f.node->src) srcs.push_back(done.at(s.get()));
          n = UOp::make(f.node->op, f.node->dtype, std::move(srcs), f.node->arg);
        }
        UOpPtr r = bottom_up ? nullptr : try_rules(n);
        if (!r && n != f.node && bottom_up) r = try_rules(n);
        if (r) {
          rewrites++;
          stack.push_back({f.node, 2, r});
          if (!done.count(r.get())) stack.push_back({r, 0, nullptr});
        } else {
          finish(f.node, n);
          if (n != f.node) finish(n, n);
        }
      } else {
        finish(f.node, done.at(f.alt.get()));
      }
    }
    return done.at(root.get());
  }
};
}  // namespace

UOpPtr graph_rewrite(const UOpPtr& sink, const PatternMatcher& pm, void* ctx, bool bottom_up, int64_t* rewrites) {
  Rewriter rw{pm, ctx, bottom_up, 0, {}, {}};
  UOpPtr out = rw.run(sink);
  if (rewrites) *rewrites = rw.rewrites;
  return out;
}

UOpPtr graph_rewrite_map(const UOpPtr& sink, const PatternMatcher& pm,
                         std::unordered_map<const UOp*, UOpPtr>& rewritten) {
  Rewriter rw{pm, nullptr, false, 0, {}, {}};
  UOpPtr out = rw.run(sink);
  rewritten.clear();
  for (const UOp* u : toposort(sink)) rewritten.emplace(u, rw.done.at(u));  // (not the rules' own nodes: they die)
  return out;
}

namespace {
// A named rewrite under VIZ: recorded with its input, output, rules fired and time (uop/viz_trace.h).
UOpPtr traced_rewrite(const std::string& name, const UOpPtr& sink, const PatternMatcher& pm, void* ctx,
                      bool bottom_up, int64_t* rewrites) {
  std::vector<int64_t> fired(pm.size(), 0);
  std::vector<viz::RewriteMatch> matches;
  auto t0 = std::chrono::steady_clock::now();
  Rewriter rw{pm, ctx, bottom_up, 0, {}, {}, &fired, &matches};
  UOpPtr out;
  {
    viz::StepDepth inside;  // (rewrites run by its rules are one level deeper)
    out = rw.run(sink);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<viz::FiredRule> rules;
  std::vector<size_t> listed(fired.size(), 0);  // pm's rule index -> its place in `rules`
  for (size_t i = 0; i < fired.size(); i++)
    if (fired[i] > 0) listed[i] = rules.size(), rules.push_back({pm.describe(i), fired[i]});
  for (viz::RewriteMatch& m : matches) m.rule = listed[m.rule];
  viz::record_step(name, sink, out, rw.rewrites, seconds, rules, matches);
  *rewrites = rw.rewrites;
  return out;
}
}  // namespace

UOpPtr graph_rewrite(const std::string& name, const UOpPtr& sink, const PatternMatcher& pm, void* ctx, bool bottom_up) {
  const bool traced = viz::enabled();
  if (!traced && !PassLog::current()) return graph_rewrite(sink, pm, ctx, bottom_up);
  std::optional<ScopedPass> pass;
  if (PassLog::current()) pass.emplace(name);
  int64_t n = 0;
  UOpPtr out = traced ? traced_rewrite(name, sink, pm, ctx, bottom_up, &n) : graph_rewrite(sink, pm, ctx, bottom_up, &n);
  if (pass) pass->set(n, int64_t(toposort(out).size()));
  return out;
}

}  // namespace tg
