// Tensor::einsum: parse the formula, take diagonals for labels repeated within one operand, line every operand
// up on one sorted list of labels (permute + reshape, size 1 where a label is missing), multiply with
// broadcasting, sum the labels the output lacks, and permute to the output order. Everything but the multiply
// and the sum is a view, so a contraction is one fused reduce kernel, like a matmul.
#include <algorithm>
#include <cctype>
#include <map>

#include "tensor/tensor_internal.h"

namespace tg {
namespace {

// Letters keep their character code as label; the dims an ellipsis stands for get labels below 0, so they
// can never clash with a letter. An ellipsis dim is named by its distance from the right: -1 the last.
using Labels = std::vector<int>;

[[noreturn]] void fail(const std::string& formula, const std::string& why) {
  throw Error("einsum: formula \"" + formula + "\": " + why);
}

// "ab...c" -> labels, given the operand's rank (0 for the output, where `ell` says how many dims "..." means).
Labels parse_term(const std::string& formula, const std::string& term, int64_t ndim, int64_t* ell_out) {
  size_t dots = term.find("...");
  if (dots != std::string::npos && term.find("...", dots + 3) != std::string::npos)
    fail(formula, "term \"" + term + "\" has more than one ellipsis");
  std::string letters = dots == std::string::npos ? term : term.substr(0, dots) + term.substr(dots + 3);
  for (char c : letters)
    if (!std::isalpha(static_cast<unsigned char>(c)))
      fail(formula, std::string("'") + c + "' is not a letter (labels are a-z, A-Z)");
  int64_t n_ell = 0;
  if (ell_out) {  // an operand: the ellipsis covers whatever dims the letters leave over
    n_ell = ndim - int64_t(letters.size());
    if (n_ell < 0 || (dots == std::string::npos && n_ell != 0))
      fail(formula, "term \"" + term + "\" has " + std::to_string(letters.size()) + " labels for an operand of rank " +
                        std::to_string(ndim));
    *ell_out = n_ell;
  } else {
    n_ell = dots == std::string::npos ? 0 : ndim;
  }
  Labels out;
  for (size_t i = 0; i < term.size();) {
    if (i == dots) {
      for (int64_t e = n_ell; e >= 1; e--) out.push_back(-int(e));
      i += 3;
    } else {
      out.push_back(static_cast<unsigned char>(term[i++]));
    }
  }
  return out;
}

}  // namespace

Tensor Tensor::einsum(const std::string& formula_in, const std::vector<Tensor>& operands) {
  std::string formula;
  for (char c : formula_in)
    if (!std::isspace(static_cast<unsigned char>(c))) formula += c;
  if (operands.empty()) fail(formula_in, "needs at least one operand");
  size_t arrow = formula.find("->");
  std::string lhs = formula.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != operands.size())
    fail(formula_in, std::to_string(terms.size()) + " input terms for " + std::to_string(operands.size()) +
                         " operands");

  std::vector<Tensor> xs = operands;
  std::vector<Labels> labels;
  int64_t max_ell = 0;
  for (size_t i = 0; i < xs.size(); i++) {
    int64_t ell = 0;
    labels.push_back(parse_term(formula_in, terms[i], xs[i].ndim(), &ell));
    max_ell = std::max(max_ell, ell);
  }

  // Output labels: as written, or (implicit) the ellipsis dims then the letters used once, in ASCII order.
  Labels out;
  if (arrow != std::string::npos) {
    std::string rhs = formula.substr(arrow + 2);
    if (rhs.find("->") != std::string::npos || rhs.find(',') != std::string::npos)
      fail(formula_in, "the output term \"" + rhs + "\" is malformed");
    out = parse_term(formula_in, rhs, max_ell, nullptr);
    for (size_t i = 0; i < out.size(); i++) {
      if (std::count(out.begin(), out.end(), out[i]) > 1 && out[i] > 0)
        fail(formula_in, std::string("output label '") + char(out[i]) + "' appears twice");
      bool found = false;
      for (auto& l : labels) found |= std::find(l.begin(), l.end(), out[i]) != l.end();
      if (!found && out[i] > 0) fail(formula_in, std::string("output label '") + char(out[i]) + "' is in no input");
    }
  } else {
    std::map<int, int> count;
    for (auto& l : labels)
      for (int c : l) count[c]++;
    for (int64_t e = max_ell; e >= 1; e--) out.push_back(-int(e));
    for (auto [c, n] : count)
      if (c > 0 && n == 1) out.push_back(c);
  }

  // Diagonals for labels repeated inside one operand ("ii->i", "ii").
  for (size_t i = 0; i < xs.size(); i++) {
    for (bool again = true; again;) {
      again = false;
      Labels& l = labels[i];
      for (size_t j = 0; j < l.size() && !again; j++) {
        for (size_t k = j + 1; k < l.size() && !again; k++) {
          if (l[j] != l[k]) continue;
          Shape s = xs[i].shape();
          if (s[j] != s[k])
            fail(formula_in, std::string("label '") + char(l[j]) + "' of operand " + std::to_string(i) + " " +
                                 to_string(s) + " has sizes " + std::to_string(s[j]) + " and " +
                                 std::to_string(s[k]));
          xs[i] = xs[i].diagonal(0, int64_t(j), int64_t(k));  // x[..., i, ..., i, ...] -> x[..., i], i last
          int c = l[j];
          l.erase(l.begin() + int64_t(k));
          l.erase(l.begin() + int64_t(j));
          l.push_back(c);
          again = true;
        }
      }
    }
  }

  // One size per label: equal everywhere, or 1 (broadcast).
  std::map<int, int64_t> size;
  for (size_t i = 0; i < xs.size(); i++) {
    Shape s = xs[i].shape();
    for (size_t d = 0; d < s.size(); d++) {
      auto [it, fresh] = size.emplace(labels[i][d], s[d]);
      if (fresh || it->second == s[d] || s[d] == 1) continue;
      if (it->second != 1) {
        std::string name = labels[i][d] > 0 ? std::string(1, char(labels[i][d])) : std::string("...");
        fail(formula_in, "label '" + name + "' has sizes " + std::to_string(it->second) + " and " +
                             std::to_string(s[d]) + " (operand " + std::to_string(i) + " " + to_string(s) + ")");
      }
      it->second = s[d];
    }
  }
  for (int c : out) size.emplace(c, 1);  // an output "..." no operand filled
  Labels alpha;
  for (auto& [c, n] : size) alpha.push_back(c);

  // Align every operand to alpha, multiply, sum what the output lacks.
  std::optional<Tensor> acc;
  for (size_t i = 0; i < xs.size(); i++) {
    Labels sorted = labels[i];
    std::sort(sorted.begin(), sorted.end());
    std::vector<int64_t> order;
    for (int c : sorted) order.push_back(int64_t(std::find(labels[i].begin(), labels[i].end(), c) - labels[i].begin()));
    Tensor x = xs[i].ndim() ? xs[i].permute(order) : xs[i];
    Shape xs_sorted = x.shape(), aligned;
    for (int c : alpha) {
      auto it = std::find(sorted.begin(), sorted.end(), c);
      aligned.push_back(it == sorted.end() ? sint(1) : xs_sorted[size_t(it - sorted.begin())]);
    }
    x = x.reshape(aligned);
    acc = acc ? *acc * x : x;
  }
  std::vector<int64_t> red;
  Labels kept;
  for (size_t a = 0; a < alpha.size(); a++) {
    if (std::find(out.begin(), out.end(), alpha[a]) == out.end()) red.push_back(int64_t(a));
    else kept.push_back(alpha[a]);
  }
  Tensor r = red.empty() ? *acc : acc->sum(red);
  std::vector<int64_t> perm;
  for (int c : out) perm.push_back(int64_t(std::find(kept.begin(), kept.end(), c) - kept.begin()));
  return perm.empty() ? r : r.permute(perm);
}

}  // namespace tg
