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

bool cpu_has_avx512bw() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool ok = cpu_has_avx2_fma() && __builtin_cpu_supports("avx512f") &&
                         __builtin_cpu_supports("avx512bw");
  return ok;
#else
  return false;
#endif
}

namespace {
bool env_flag(const char* name) {
  const char* e = std::getenv(name);
  return e && *e && std::strcmp(e, "0") != 0;
}
}  // namespace

bool cpu_portable_forced() { return env_flag("TENSORCONV_FORCE_PORTABLE"); }
bool cpu_avx2_forced() { return env_flag("TENSORCONV_FORCE_AVX2"); }

}  // namespace tc
