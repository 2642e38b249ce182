#pragma once
// The statement walker of CStyleRenderer (private to renderer/): one pass over a linearized kernel that prints a
// statement per node, after three analyses of the whole list decide how: which pure expressions print inside
// their single user (inlined), which 16-bit loads stay 16-bit for a tensor core (raw16), and which WGMMA chains
// update one accumulator array in place (renderer/wgmma_arrays.h). The spellings come from the renderer's tables
// and hooks (renderer/cstyle.h), a GPU's matrix units from its MatrixSyntax (renderer/matrix_syntax.h).
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "renderer/cstyle.h"
#include "renderer/program_walk.h"
#include "renderer/wgmma_arrays.h"

namespace tg {

class CStyleWalk : ProgramWalk {
 public:
  CStyleWalk(const CStyleRenderer& ren, const std::string& name, const std::vector<UOpPtr>& uops);
  std::string run();

 private:
  using Param = CStyleRenderer::Param;

  const CStyleRenderer& ren_;

  // ---- analyses ----
  // (ProgramWalk's uses_ are weighted by how often the user's spelling repeats the operand)
  std::vector<int> depth_;  // per node: the blocks open around it
  std::vector<char> inlined_;
  std::vector<char> raw16_;
  WgmmaArrays wg_arrays_;
  bool has_wgmma_ = false;

  void count_depths();
  void choose_inlined();
  void find_raw16();
  void collect_types();

  // ---- emission ----
  CStyleRenderer::Prelude pre_;
  std::vector<std::string> r_;  // each node's expression or variable name
  std::string body_;
  int64_t shared_end_ = 0;  // bytes of shared memory the DEFINE_LOCALs so far take
  int indent_ = 1;
  std::vector<char> wg_declared_;
  std::vector<std::string> block_drains_;  // per open block: the waits its end owes deferred WGMMAs

  const MatrixSyntax& matrix(size_t i) const;  // the renderer's, for node i (throws where it has none)
  std::string fresh(const std::string& prefix) { return prefix + std::to_string(next_id(prefix)); }
  void line(const std::string& s) { body_ += std::string(size_t(2 * indent_), ' ') + s + "\n"; }
  void lines(const std::string& stmts);  // statements separated by newlines, each a line
  const std::string& src(const UOp& u, size_t k) const { return r_[pos(u.src.at(k).get())]; }

  void emit(size_t i);
  void define_global(size_t i, const UOp& u);
  void define_var(size_t i, const UOp& u);
  void define_local(size_t i, const UOp& u);
  void special(size_t i, const UOp& u);
  void open_block(size_t i, const UOp& u);
  void close_block(size_t i);
  void wmma(size_t i, const UOp& u);
  void wgmma(size_t i, const UOp& u);
  void cp_async(size_t i, const UOp& u);
  void tensor_map(size_t i, const UOp& u);
  void bulk_copy(size_t i, const UOp& u);
  void define_acc(size_t i, const UOp& u);
  void load(size_t i, const UOp& u);
  void store(size_t i, const UOp& u);
  void expression(size_t i, const UOp& u);
  std::string finish();
};

}  // namespace tg
