// tg::Progress (include/tg/progress.h): tinygrad's tqdm line, drawn in place on a terminal and logged every
// tenth otherwise.
#include "tg/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tg {
namespace {

// tinygrad's HMS: "MM:SS", with hours in front only when there are any ("1:02:03").
std::string hms(double t) {
  if (!(t >= 0) || t > 1e9) return "?";  // NaN or absurd estimates
  int64_t s = int64_t(t);
  char buf[48];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%lld:%02d:%02d", (long long)(s / 3600), int(s % 3600 / 60), int(s % 60));
  else std::snprintf(buf, sizeof buf, "%02d:%02d", int(s / 60), int(s % 60));
  return buf;
}

// Display width of UTF-8 text, not counting ANSI color escapes (tinygrad's ansilen).
size_t display_len(const std::string& s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == '\033' && i + 1 < s.size() && s[i + 1] == '[') {
      while (i < s.size() && !(s[i] >= '@' && s[i] <= '~' && s[i] != '[')) i++;
      continue;
    }
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) n++;  // count lead bytes only
  }
  return n;
}

int terminal_cols() {
  winsize ws{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  if (const char* c = std::getenv("COLUMNS"); c && std::atoi(c) > 0) return std::atoi(c);
  return 80;
}

}  // namespace

Progress::Progress(int64_t total, std::string desc, ProgressOptions opts)
    : total_(std::max<int64_t>(total, 0)), opts_(std::move(opts)) {
  set_description(desc);
  tty_ = opts_.tty < 0 ? (!opts_.sink && isatty(STDERR_FILENO)) : opts_.tty != 0;
  // A log has no width to fit: 100 columns leave the bar room next to a postfix.
  ncols_ = opts_.ncols > 0 ? opts_.ncols : tty_ ? terminal_cols() : 100;
  start_ = last_draw_ = std::chrono::steady_clock::now();
  if (tty_) draw(false);
}

Progress::~Progress() { close(); }

void Progress::set_description(const std::string& desc) { desc_ = desc.empty() ? "" : desc + ": "; }
void Progress::set_postfix(const std::string& text) { postfix_ = text; }

double Progress::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::string Progress::render(double el) const {
  double prog = total_ ? std::min(1.0, double(n_) / double(total_)) : 0.0;
  std::string count = std::to_string(n_) + (total_ ? "/" + std::to_string(total_) : opts_.unit);
  std::string est = total_ ? "<" + (n_ && el > 0 ? hms(el / prog - el) : std::string("?")) : "";
  // Slow loops read better as seconds per step, as tqdm shows them ("44.10s/it" rather than "0.02it/s").
  char rate[48];
  double r = n_ && el > 0 ? double(n_) / el : 0;
  if (r <= 0) std::snprintf(rate, sizeof rate, "?%s/s", opts_.unit.c_str());
  else if (r < 1) std::snprintf(rate, sizeof rate, "%5.2fs/%s", 1 / r, opts_.unit.c_str());
  else std::snprintf(rate, sizeof rate, "%5.2f%s/s", r, opts_.unit.c_str());
  std::string suf = count + " [" + hms(el) + est + ", " + rate + (postfix_.empty() ? "" : ", " + postfix_) + "]";
  if (!total_) return desc_ + suf;
  // tinygrad's layout: desc, "NNN%|", the bar, "| ", the suffix, all within ncols.
  int64_t sz = std::max<int64_t>(int64_t(ncols_) - int64_t(display_len(desc_)) - 7 - int64_t(display_len(suf)), 1);
  double num = double(sz) * prog;
  int64_t full = int64_t(num);
  static const char* kPartial[8] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
  std::string bar;
  for (int64_t i = 0; i < full; i++) bar += "█";
  int64_t width = full;
  if (full < sz) {
    const char* part = kPartial[int64_t(8 * num) % 8];
    bar += part;
    width += *part ? 1 : 0;
  }
  bar += std::string(size_t(std::max<int64_t>(sz - width, 0)), ' ');
  char pct[16];
  std::snprintf(pct, sizeof pct, "%3.0f%%|", 100 * prog);
  return desc_ + pct + bar + "| " + suf;
}

void Progress::emit(const std::string& text) {
  if (opts_.sink) {
    opts_.sink(text);
    return;
  }
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
}

void Progress::draw(bool final) {
  if (opts_.disable) return;
  std::string line = render(elapsed());
  if (tty_) {
    emit("\r" + line + (final ? "\n" : ""));
  } else {
    emit(line + "\n");
  }
  last_draw_ = std::chrono::steady_clock::now();
  drawn_n_ = n_;
}

void Progress::update(int64_t n) {
  if (closed_) return;
  n_ += n;
  if (opts_.disable) return;
  if (tty_) {
    // Redraw at most ~20 times a second: a fast loop must not spend its time printing.
    if (std::chrono::steady_clock::now() - last_draw_ >= std::chrono::milliseconds(50) || (total_ && n_ >= total_))
      draw(false);
    return;
  }
  if (!total_) return;
  int64_t tenth = std::min<int64_t>(n_ * 10 / total_, 10);
  if (tenth > logged_tenth_ && tenth > 0) {
    logged_tenth_ = tenth;
    draw(false);
  }
}

void Progress::write(const std::string& line) {
  if (opts_.disable) return;
  if (tty_) {
    emit("\r\033[K" + line + "\n");
    if (!closed_) draw(false);
  } else {
    emit(line + "\n");
  }
}

void Progress::close() {
  if (closed_) return;
  closed_ = true;
  if (opts_.disable) return;
  if (tty_) {
    draw(true);
  } else if (drawn_n_ != n_) {
    draw(true);  // the final count was not logged yet
  }
}

}  // namespace tg
