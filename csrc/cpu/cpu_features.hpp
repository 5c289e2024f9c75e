// Run-time CPU feature checks for the AVX2 code paths (the package targets baseline x86-64).
#pragma once

namespace tc {
bool cpu_has_avx2_fma();     // the CPU (and OS) support AVX2 and FMA
bool cpu_portable_forced();  // TENSORCONV_FORCE_PORTABLE is set (and not "0")
inline bool cpu_use_avx2() { return cpu_has_avx2_fma() && !cpu_portable_forced(); }
}  // namespace tc
