#pragma once
// tg::Progress: a progress bar in the look of tinygrad's tqdm (tinygrad/helpers.py), on stderr:
//
//   train:  40%|████████████▍                  | 28/70 [00:14<00:21,  1.95it/s, loss: 0.42 acc: 85.10%]
//
// On a terminal the line is redrawn in place (at most ~20 times a second, and at the end); otherwise
// (a log file, CI) one line is printed each time another tenth of the total is done, and at the end.
//
//   tg::Progress bar(steps, "train");
//   for (int i = 0; i < steps; i++) { ...; bar.set_postfix("loss: 0.42"); bar.update(); }
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace tg {

struct ProgressOptions {
  std::string unit = "it";
  int tty = -1;    // -1: redraw in place when stderr is a terminal; 0: log lines; 1: redraw in place
  int ncols = 0;   // line width; 0: the terminal's ($COLUMNS, else 80), 100 in a log
  bool disable = false;
  std::function<void(const std::string&)> sink;  // receives the text instead of stderr (tests)
};

class Progress {
 public:
  explicit Progress(int64_t total, std::string desc = "", ProgressOptions opts = {});
  ~Progress();  // closes
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void update(int64_t n = 1);                // n more done; draws when due
  void set_description(const std::string& desc);  // shown before the bar, followed by ": "
  void set_postfix(const std::string& text);      // shown after the rate, inside the brackets
  void write(const std::string& line);            // prints a line above the bar
  void close();                                    // final draw and newline; later calls do nothing

  int64_t n() const { return n_; }
  int64_t total() const { return total_; }
  // The bar line for the current count after `elapsed_s` seconds (what a draw prints, without "\r").
  std::string render(double elapsed_s) const;

 private:
  void draw(bool final);
  void emit(const std::string& text);
  double elapsed() const;

  int64_t total_, n_ = 0;
  std::string desc_, postfix_;
  ProgressOptions opts_;
  bool tty_, closed_ = false;
  int ncols_;
  int64_t logged_tenth_ = 0;  // log mode: the last tenth a line was printed for
  int64_t drawn_n_ = -1;      // the count of the last line drawn
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace tg
