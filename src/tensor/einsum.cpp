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

// The formula without spaces, split into its input terms and its output term (`has_output` false without "->").
struct Formula {
  std::string text;  // as the user wrote it, for messages
  std::vector<std::string> inputs;
  std::string output;
  bool has_output = false;
};

Formula split_formula(const std::string& formula_in, size_t n_operands) {
  std::string formula;
  for (char c : formula_in)
    if (!std::isspace(static_cast<unsigned char>(c))) formula += c;
  if (n_operands == 0) fail(formula_in, "needs at least one operand");
  Formula f{formula_in, {}, "", false};
  const size_t arrow = formula.find("->");
  const std::string lhs = formula.substr(0, arrow);
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    f.inputs.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (f.inputs.size() != n_operands)
    fail(formula_in, std::to_string(f.inputs.size()) + " input terms for " + std::to_string(n_operands) + " operands");
  if (arrow != std::string::npos) f.has_output = true, f.output = formula.substr(arrow + 2);
  return f;
}

// Output labels: as written, or (implicit) the ellipsis dims then the letters used once, in ASCII order.
Labels output_labels(const Formula& f, const std::vector<Labels>& labels, int64_t max_ell) {
  Labels out;
  if (f.has_output) {
    if (f.output.find("->") != std::string::npos || f.output.find(',') != std::string::npos)
      fail(f.text, "the output term \"" + f.output + "\" is malformed");
    out = parse_term(f.text, f.output, max_ell, nullptr);
    for (size_t i = 0; i < out.size(); i++) {
      if (std::count(out.begin(), out.end(), out[i]) > 1 && out[i] > 0)
        fail(f.text, std::string("output label '") + char(out[i]) + "' appears twice");
      bool found = false;
      for (auto& l : labels) found |= std::find(l.begin(), l.end(), out[i]) != l.end();
      if (!found && out[i] > 0) fail(f.text, std::string("output label '") + char(out[i]) + "' is in no input");
    }
    return out;
  }
  std::map<int, int> count;
  for (auto& l : labels)
    for (int c : l) count[c]++;
  for (int64_t e = max_ell; e >= 1; e--) out.push_back(-int(e));
  for (auto [c, n] : count)
    if (c > 0 && n == 1) out.push_back(c);
  return out;
}

// Diagonals for labels repeated inside one operand ("ii->i", "ii"): x[..., i, ..., i, ...] -> x[..., i], i last.
void take_diagonals(const std::string& formula, size_t i, Tensor& x, Labels& l) {
  for (bool again = true; again;) {
    again = false;
    for (size_t j = 0; j < l.size() && !again; j++) {
      for (size_t k = j + 1; k < l.size() && !again; k++) {
        if (l[j] != l[k]) continue;
        Shape s = x.shape();
        if (s[j] != s[k])
          fail(formula, std::string("label '") + char(l[j]) + "' of operand " + std::to_string(i) + " " +
                            to_string(s) + " has sizes " + std::to_string(s[j]) + " and " + std::to_string(s[k]));
        x = x.diagonal(0, int64_t(j), int64_t(k));
        int c = l[j];
        l.erase(l.begin() + int64_t(k));
        l.erase(l.begin() + int64_t(j));
        l.push_back(c);
        again = true;
      }
    }
  }
}

// One size per label: equal everywhere, or 1 (broadcast); every output label has one.
std::map<int, int64_t> label_sizes(const std::string& formula, const std::vector<Tensor>& xs,
                                   const std::vector<Labels>& labels, const Labels& out) {
  std::map<int, int64_t> size;
  for (size_t i = 0; i < xs.size(); i++) {
    Shape s = xs[i].shape();
    for (size_t d = 0; d < s.size(); d++) {
      auto [it, fresh] = size.emplace(labels[i][d], s[d]);
      if (fresh || it->second == s[d] || s[d] == 1) continue;
      if (it->second != 1) {
        std::string name = labels[i][d] > 0 ? std::string(1, char(labels[i][d])) : std::string("...");
        fail(formula, "label '" + name + "' has sizes " + std::to_string(it->second) + " and " + std::to_string(s[d]) +
                          " (operand " + std::to_string(i) + " " + to_string(s) + ")");
      }
      it->second = s[d];
    }
  }
  for (int c : out) size.emplace(c, 1);  // an output "..." no operand filled
  return size;
}

// x (labels l) permuted to sorted labels and reshaped to every label of alpha (size 1 where it lacks one).
Tensor align(const Tensor& x, const Labels& l, const Labels& alpha) {
  Labels sorted = l;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> order;
  for (int c : sorted) order.push_back(int64_t(std::find(l.begin(), l.end(), c) - l.begin()));
  Tensor y = x.ndim() ? x.permute(order) : x;
  Shape ys = y.shape(), aligned;
  for (int c : alpha) {
    auto it = std::find(sorted.begin(), sorted.end(), c);
    aligned.push_back(it == sorted.end() ? sint(1) : ys[size_t(it - sorted.begin())]);
  }
  return y.reshape(aligned);
}

}  // namespace

Tensor Tensor::einsum(const std::string& formula_in, const std::vector<Tensor>& operands) {
  const Formula f = split_formula(formula_in, operands.size());
  std::vector<Tensor> xs = operands;
  std::vector<Labels> labels;
  int64_t max_ell = 0;
  for (size_t i = 0; i < xs.size(); i++) {
    int64_t ell = 0;
    labels.push_back(parse_term(formula_in, f.inputs[i], xs[i].ndim(), &ell));
    max_ell = std::max(max_ell, ell);
  }
  const Labels out = output_labels(f, labels, max_ell);
  for (size_t i = 0; i < xs.size(); i++) take_diagonals(formula_in, i, xs[i], labels[i]);
  Labels alpha;
  for (auto& [c, n] : label_sizes(formula_in, xs, labels, out)) alpha.push_back(c);

  // Align every operand to alpha, multiply, sum what the output lacks, put the rest in the output's order.
  std::optional<Tensor> acc;
  for (size_t i = 0; i < xs.size(); i++) {
    Tensor x = align(xs[i], labels[i], alpha);
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
