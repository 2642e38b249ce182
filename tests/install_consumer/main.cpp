// Built against an installed tg (find_package(tg) or pkg-config) by the install_consumer test.
#include <tg/dtype.h>
#include <tg/error.h>

#include <cstdio>

int main() {
  tg::DType d = tg::dtypes::promote(tg::dtypes::int8, tg::dtypes::uint8);
  std::printf("promote(int8, uint8) = %s\n", d.repr().c_str());
  try {
    tg::dtypes::from_name("not_a_dtype");
  } catch (const tg::Error& e) {
    std::printf("tg::Error: %s\n", e.what());
    return d == tg::dtypes::int16 ? 0 : 1;
  }
  return 1;
}
