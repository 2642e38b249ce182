#pragma once
// Renderer: a linearized kernel (see codegen/program.h) -> source text for one backend.
#include <string>
#include <vector>

#include "uop/uop.h"

namespace tg {

class Renderer {
 public:
  virtual ~Renderer() = default;
  // Source for a kernel called `name` whose body is `uops`; the function takes the DEFINE_GLOBALs in
  // order, then the DEFINE_VARs (int), as parameters.
  virtual std::string render(const std::string& name, const std::vector<UOpPtr>& uops) const = 0;
  virtual bool has_local() const { return false; }   // GPU-style launch with SPECIAL indices
  virtual bool supports(Ops op) const { return true; }  // codegen decomposes ops a backend lacks
  virtual std::string device() const = 0;
};

}  // namespace tg
