#include "registry.hpp"

#include "factories.hpp"

namespace tc {

#ifdef TC_WITH_CUDA
#define TC_CUDA_FACTORY(f) &f
#else
#define TC_CUDA_FACTORY(f) nullptr
#endif

namespace {
using P = Precision;
}

// The one table. Order matters only for listing; "auto" ranks methods in Python (_api.py).
const std::vector<MethodInfo>& registry() {
  static const std::vector<MethodInfo> table = {
      {"direct", Device::cpu, {P::fp16fp32, P::fp32, P::fp64}, 0, &make_direct_plan,
       "CPU direct correlation, threads over rows, register-blocked AVX2/FMA kernels "
       "(portable fallback)"},
      {"simd_u8", Device::cpu, {}, 0, nullptr,
       "CPU 8-bit integer filtering (Kelefouras 2022, AVX2 maddubs, AVX-512 for sep and pairs; "
       "portable fallback), "
       "OpenCV filter2D semantics",
       "filter2d_u8", &simd_u8_note},
      {"naive", Device::cuda, {P::fp16, P::fp16fp32, P::bf16, P::tf32, P::fp32, P::fp64}, 60,
       TC_CUDA_FACTORY(make_naive_plan),
       "CUDA, one thread per output pixel (two in a half2 for fp16), image and kernel from global "
       "memory (im2tensor paper's \"naive\")"},
      {"naive_shmem", Device::cuda, {P::fp16, P::fp16fp32, P::bf16, P::tf32, P::fp32, P::fp64},
       60, TC_CUDA_FACTORY(make_naive_shmem_plan),
       "CUDA, image tile + apron and kernel chunks in shared memory (constant memory optional), "
       "register sliding window; any kernel size (im2tensor paper's \"naive + shmem\")"},
      {"separable", Device::cuda, {P::fp16, P::fp16fp32, P::bf16, P::tf32, P::fp32, P::fp64}, 60,
       TC_CUDA_FACTORY(make_separable_plan),
       "CUDA row + column passes in shared memory (Podlozhnyuk); rank-r kernels as r passes "
       "(SVD rank with a precision-aware tolerance), exact for any kernel"},
      {"fft", Device::cuda, {P::fp16, P::fp16fp32, P::fp32, P::fp64}, 60,
       TC_CUDA_FACTORY(make_fft_plan),
       "cuFFT R2C/C2R product of spectra, fast transform sizes, kernel spectrum once per plan; "
       "fp16 via cufftXt half (power-of-two sizes), fp16fp32 transforms in fp32"},
      // im2tensor (Seznec et al. 2022), csrc/cuda/im2tensor/. sm_80: bf16, tf32 and DMMA WMMA.
      {"im2tensor", Device::cuda, {P::fp16, P::fp16fp32, P::bf16, P::tf32, P::fp32, P::fp64}, 80,
       TC_CUDA_FACTORY(make_im2tensor_plan),
       "im2tensor Alg. 1: P = K^T S on tensor cores, S rows read from global, then Tr+ pass"},
      {"im2tensor_shmem", Device::cuda,
       {P::fp16, P::fp16fp32, P::bf16, P::tf32, P::fp32, P::fp64}, 80,
       TC_CUDA_FACTORY(make_im2tensor_shmem_plan),
       "im2tensor with K and S blocks staged in shared memory, then Tr+ pass"},
      {"im2tensor_fused", Device::cuda,
       {P::fp16, P::fp16fp32, P::bf16, P::tf32, P::fp32, P::fp64}, 80,
       TC_CUDA_FACTORY(make_im2tensor_fused_plan),
       "im2tensor Alg. 2: in-block diagonal sums, shared partial-sum rows, recombination"},
      {"im2tensor_atomic", Device::cuda,
       {P::fp16, P::fp16fp32, P::bf16, P::tf32, P::fp32, P::fp64}, 80,
       TC_CUDA_FACTORY(make_im2tensor_atomic_plan),
       "im2tensor fused with atomic accumulation into the output, no workspace"},
      {"im2tensor_cublas", Device::cuda,
       {P::fp16, P::fp16fp32, P::bf16, P::tf32, P::fp32, P::fp64}, 80,
       TC_CUDA_FACTORY(make_im2tensor_cublas_plan),
       "im2tensor reference: explicit S, cuBLAS strided batched GEMM, Tr+ pass"},
      // Paplinski 1995, csrc/cuda/paplinski/. sm_90: fp64 on m16n8k8 DMMA.
      {"toeplitz_tc", Device::cuda, {P::fp16, P::fp16fp32, P::bf16, P::tf32, P::fp32, P::fp64},
       90, TC_CUDA_FACTORY(make_toeplitz_tc_plan),
       "Paplinski's rcm as banded Toeplitz tiles: sum over kernel rows of image rows x band, "
       "accumulated on the tensor cores (mma.sync; fp32 as 3xTF32, fp64 on DMMA)"},
  };
  return table;
}

#undef TC_CUDA_FACTORY

const MethodInfo& find_method(const std::string& name) {
  std::string names;
  for (const auto& m : registry()) {
    if (name == m.name) return m;
    names += names.empty() ? "" : ", ";
    names += m.name;
  }
  throw ValueError("unknown method '" + name + "'; valid methods: auto, " + names);
}

bool supports(const MethodInfo& m, Precision p) {
  for (auto q : m.precisions)
    if (q == p) return true;
  return false;
}

std::string unavailable_reason(const MethodInfo& m) {
  if (m.device == Device::cpu) return m.factory || m.entry_point ? "" : "not built";
  if (!built_with_cuda()) return "tensorconv was built without CUDA (nvcc not found at build time)";
  if (!m.factory) return "not built";
  std::string why = cuda_unavailable_reason();
  if (!why.empty()) return why;
  int cc = cuda_compute_capability();
  if (cc < m.min_compute_capability)
    return "needs compute capability " + std::to_string(m.min_compute_capability / 10) + "." +
           std::to_string(m.min_compute_capability % 10) + ", device has " +
           std::to_string(cc / 10) + "." + std::to_string(cc % 10);
  return "";
}

std::unique_ptr<Plan> make_plan(const std::string& method, const PlanRequest& r) {
  const MethodInfo& m = find_method(method);
  if (m.entry_point)
    throw ValueError("method '" + method + "' is not a correlate2d/convolve2d method: it filters "
                     "uint8 images with integer kernels; call tensorconv." + m.entry_point +
                     " instead");
  if (!supports(m, r.precision)) {
    std::string ps;
    for (auto q : m.precisions) ps += std::string(ps.empty() ? "" : ", ") + precision_name(q);
    throw ValueError("method '" + method + "' does not support precision '" +
                     precision_name(r.precision) + "'; it supports: " + ps);
  }
  std::string why = unavailable_reason(m);
  if (!why.empty()) throw ValueError("method '" + method + "' is unavailable: " + why);
  if (!r.kernel || r.kh < 1 || r.kw < 1) throw ValueError("kernel must be non-empty");
  if (r.ih < r.kh || r.iw < r.kw)
    throw ValueError("image (" + std::to_string(r.ih) + "x" + std::to_string(r.iw) +
                     ") must be at least as large as the kernel (" + std::to_string(r.kh) + "x" +
                     std::to_string(r.kw) + ") for a valid correlation");
  return m.factory(r);
}

void Plan::execute(const Tensor2D& in, const Tensor2D& out, std::uintptr_t stream) {
  const DType want = storage_dtype(precision_);
  auto shape = [](std::int64_t a, std::int64_t b) {
    return "(" + std::to_string(a) + ", " + std::to_string(b) + ")";
  };
  if (in.dtype != want || out.dtype != want)
    throw TypeError(std::string("precision ") + precision_name(precision_) + " needs " +
                    dtype_name(want) + " input and output, got " + dtype_name(in.dtype) + " and " +
                    dtype_name(out.dtype));
  if (in.rows != ih_ || in.cols != iw_)
    throw ValueError("plan was made for image shape " + shape(ih_, iw_) + ", got " +
                     shape(in.rows, in.cols));
  if (out.rows != out_rows() || out.cols != out_cols())
    throw ValueError("output must have shape " + shape(out_rows(), out_cols()) + ", got " +
                     shape(out.rows, out.cols));
  if (in.row_stride < in.cols || out.row_stride < out.cols)
    throw ValueError("row stride smaller than the row length");
  if (in.on_device != out.on_device)
    throw ValueError("input and output must both be on the host or both on the device");
  run(in, out, stream);
}

}  // namespace tc
