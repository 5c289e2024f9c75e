#include "cpu_features.hpp"

#include <cstdlib>
#include <cstring>

namespace tc {

bool cpu_has_avx2_fma() {
#if defined(__x86_64__) || defined(__i386__)
  // libgcc's probe also checks that the OS saves the YMM registers (XGETBV).
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return ok;
#else
  return false;
#endif
}

bool cpu_portable_forced() {
  const char* e = std::getenv("TENSORCONV_FORCE_PORTABLE");
  return e && *e && std::strcmp(e, "0") != 0;
}

}  // namespace tc
