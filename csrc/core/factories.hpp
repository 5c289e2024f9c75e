// Plan factories, one per method file. CUDA ones are defined only in CUDA builds; the registry
// references them only there.
#pragma once
#include "registry.hpp"

namespace tc {
std::unique_ptr<Plan> make_direct_plan(const PlanRequest&);  // csrc/cpu/direct.cpp
std::string direct_note();  // csrc/cpu/direct.cpp: AVX-512, AVX2 or portable kernels
std::unique_ptr<Plan> make_fft_cpu_plan(const PlanRequest&);  // csrc/cpu/fft_cpu.cpp
std::string simd_u8_note();  // csrc/cpu/simd_u8/dispatch.cpp: AVX2 or portable path, and why
// csrc/cuda/*.cu (CUDA builds only)
std::unique_ptr<Plan> make_naive_plan(const PlanRequest&);
std::unique_ptr<Plan> make_naive_shmem_plan(const PlanRequest&);
std::unique_ptr<Plan> make_separable_plan(const PlanRequest&);
std::unique_ptr<Plan> make_fft_plan(const PlanRequest&);
// csrc/cuda/methods/im2tensor/ (CUDA builds only)
std::unique_ptr<Plan> make_im2tensor_plan(const PlanRequest&);
std::unique_ptr<Plan> make_im2tensor_shmem_plan(const PlanRequest&);
std::unique_ptr<Plan> make_im2tensor_fused_plan(const PlanRequest&);
std::unique_ptr<Plan> make_im2tensor_atomic_plan(const PlanRequest&);
std::unique_ptr<Plan> make_im2tensor_cublas_plan(const PlanRequest&);
// Bilateral filter (tensorconv.filters.bilateral): csrc/cpu/bilateral.cpp, csrc/cuda/methods/bilateral/
std::unique_ptr<Plan> make_bilateral_cpu_plan(const PlanRequest&);
std::unique_ptr<Plan> make_bilateral_cuda_plan(const PlanRequest&);
std::unique_ptr<Plan> make_bilateral_tc_32x8x16_plan(const PlanRequest&);
std::unique_ptr<Plan> make_bilateral_tc_16x16x16_plan(const PlanRequest&);
// csrc/cuda/methods/paplinski/ (CUDA builds only)
std::unique_ptr<Plan> make_convmat_plan(const PlanRequest&);
std::unique_ptr<Plan> make_convmat_rows_plan(const PlanRequest&);
std::unique_ptr<Plan> make_toeplitz_tc_plan(const PlanRequest&);
// csrc/cuda/methods/fir/ (CUDA builds only)
std::unique_ptr<Plan> make_fir_kl_plan(const PlanRequest&);
std::unique_ptr<Plan> make_fir_ki_plan(const PlanRequest&);
std::unique_ptr<Plan> make_fir_ki_32x8_plan(const PlanRequest&);
std::unique_ptr<Plan> make_fir_dki_plan(const PlanRequest&);
}  // namespace tc
