// Run-time CPU feature checks for the AVX2 code paths (the package targets baseline x86-64).
#pragma once

// x86 builds compile the AVX2 files; elsewhere those files define never-called stubs.
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64)
#define TC_X86 1
#else
#define TC_X86 0
#endif

namespace tc {
bool cpu_has_avx2_fma();     // the CPU (and OS) support AVX2 and FMA
bool cpu_has_avx512bw();     // AVX-512 F and BW usable (CPU and OS save the ZMM state)
bool cpu_portable_forced();  // TENSORCONV_FORCE_PORTABLE is set (and not "0")
bool cpu_avx2_forced();      // TENSORCONV_FORCE_AVX2 is set (and not "0"): no AVX-512 tier
inline bool cpu_use_avx2() { return cpu_has_avx2_fma() && !cpu_portable_forced(); }
}  // namespace tc
