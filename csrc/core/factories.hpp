// Plan factories, one per method file. CUDA ones are defined only in CUDA builds; the registry
// references them only there.
#pragma once
#include "registry.hpp"

namespace tc {
std::unique_ptr<Plan> make_direct_plan(const PlanRequest&);  // csrc/cpu/direct.cpp
}  // namespace tc
