// Plan factories, one per method file. CUDA ones are defined only in CUDA builds; the registry
// references them only there.
#pragma once
#include "registry.hpp"

namespace tc {
std::unique_ptr<Plan> make_direct_plan(const PlanRequest&);  // csrc/cpu/direct.cpp
std::string simd_u8_note();  // csrc/cpu/simd_u8/dispatch.cpp: AVX2 or portable path, and why
}  // namespace tc
