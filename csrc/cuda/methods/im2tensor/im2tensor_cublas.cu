// im2tensor_cublas: the paper's reference point (§5.1.2). S is built explicitly
// (S[r][y][c] = I[r+y][c], eq. 3), every slice is multiplied by K̂ᵀ with one cuBLAS strided
// batched GEMM, then the shared Tr₊ pass. fp32 uses cuBLAS's exact fp32 path (cuBLAS offers no
// 3xTF32), tf32 its TF32 tensor-core path on operands rounded here.
#include <cublas_v2.h>

#include "cuda/methods/im2tensor/im2tensor.cuh"

namespace tc {
namespace cuda {
namespace i2t {
namespace {

void check_cublas(cublasStatus_t s, const char* what, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  const std::string msg = std::string("cuBLAS error ") + cublasGetStatusName(s) + " (" + what +
                          " at im2tensor_cublas.cu:" + std::to_string(line) + ")";
  if (s == CUBLAS_STATUS_ALLOC_FAILED) throw OutOfMemory(msg);
  throw DeviceError(msg);
}
#define TC_CUBLAS_CHECK(expr) check_cublas((expr), #expr, __LINE__)

// S[r][y][c] = I[r+y][c], rounded to what the GEMM reads.
template <class T>
__global__ void build_s_kernel(const typename T::In* img, long long ld, int kh, int iw, int hR,
                               typename T::Stage* S) {
  const std::size_t n = static_cast<std::size_t>(hR) * kh * iw;
  for (std::size_t e = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const int c = static_cast<int>(e % iw);
    const std::size_t t = e / iw;
    const int y = static_cast<int>(t % kh), r = static_cast<int>(t / kh);
    S[e] = to_stage<T>(img[static_cast<std::size_t>(r + y) * ld + c]);
  }
}

template <class X> constexpr cudaDataType_t cuda_type();
template <> constexpr cudaDataType_t cuda_type<__half>() { return CUDA_R_16F; }
template <> constexpr cudaDataType_t cuda_type<__nv_bfloat16>() { return CUDA_R_16BF; }
template <> constexpr cudaDataType_t cuda_type<float>() { return CUDA_R_32F; }

template <class T>
class CublasPlan final : public CudaPlan {
  using S = typename T::Stage;
  using Acc = typename T::Acc;

 public:
  explicit CublasPlan(const PlanRequest& r) : CudaPlan(r), nf_(r) {
    if (r.ih - r.kh + 1 > 0x7fffffffLL || r.iw > 0x7fffffffLL || r.kh * r.iw > 0x7fffffffLL)
      throw ValueError("im2tensor_cublas: image too large");
    hR_ = static_cast<int>(r.ih - r.kh + 1);
    wR_ = static_cast<int>(r.iw - r.kw + 1);
    const std::size_t ktn = static_cast<std::size_t>(r.kw) * r.kh;
    DeviceBuffer k64;
    k64.upload(r.kernel, sizeof(double) * ktn);
    kt_.reset(sizeof(S) * ktn);
    prep_kt_kernel<T><<<ceil_div(ktn, 256), 256>>>(k64.get<double>(), kh_, kw_, kw_, kh_,
                                                   kt_.get<S>(), nullptr);
    TC_CUDA_LAUNCH_CHECK();
    TC_CUDA_CHECK(cudaDeviceSynchronize());
    s_bytes_ = sizeof(S) * static_cast<std::size_t>(hR_) * kh_ * iw_;
    p_bytes_ = sizeof(Acc) * static_cast<std::size_t>(hR_) * kw_ * iw_;
    s_.reset(s_bytes_);
    p_.reset(p_bytes_);
    TC_CUBLAS_CHECK(cublasCreate(&handle_));
  }
  ~CublasPlan() override { if (handle_) cublasDestroy(handle_); }
  std::size_t workspace_bytes() const override { return s_bytes_ + p_bytes_; }

 protected:
  void run_device(const Tensor2D& in, const Tensor2D& out, cudaStream_t st) override {
    const int iw = static_cast<int>(iw_), kh = static_cast<int>(kh_), kw = static_cast<int>(kw_);
    build_s_kernel<T><<<4 * sm_count() * 8, 256, 0, st>>>(in.ptr<typename T::In>(),
                                                          in.row_stride, kh, iw, hR_, s_.get<S>());
    TC_CUDA_LAUNCH_CHECK();
    TC_CUBLAS_CHECK(cublasSetStream(handle_, st));
    // Row-major P_r (kw × iw) = K̂ᵀ (kw × kh) · S_r (kh × iw) is, column-major,
    // P_rᵀ (iw × kw) = S_rᵀ (iw × kh) · K (kh × kw).
    const long long sA = static_cast<long long>(kh) * iw, sC = static_cast<long long>(kw) * iw;
    if constexpr (std::is_same_v<T, TrFp16>) {
      const __half one = __float2half(1.f), zero = __float2half(0.f);
      TC_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
          handle_, CUBLAS_OP_N, CUBLAS_OP_N, iw, kw, kh, &one, s_.get(), CUDA_R_16F, iw, sA,
          kt_.get(), CUDA_R_16F, kh, 0, &zero, p_.get(), CUDA_R_16F, iw, sC, hR_,
          CUBLAS_COMPUTE_16F, CUBLAS_GEMM_DEFAULT));
    } else if constexpr (std::is_same_v<T, TrFp64>) {
      const double one = 1.0, zero = 0.0;
      TC_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
          handle_, CUBLAS_OP_N, CUBLAS_OP_N, iw, kw, kh, &one, s_.get(), CUDA_R_64F, iw, sA,
          kt_.get(), CUDA_R_64F, kh, 0, &zero, p_.get(), CUDA_R_64F, iw, sC, hR_,
          CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT));
    } else {
      const float one = 1.f, zero = 0.f;
      const cublasComputeType_t ct = std::is_same_v<T, TrTf32> ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                                : CUBLAS_COMPUTE_32F;
      TC_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
          handle_, CUBLAS_OP_N, CUBLAS_OP_N, iw, kw, kh, &one, s_.get(), cuda_type<S>(), iw, sA,
          kt_.get(), cuda_type<S>(), kh, 0, &zero, p_.get(), CUDA_R_32F, iw, sC, hR_, ct,
          CUBLAS_GEMM_DEFAULT));
    }
    using Out = typename T::Out;
    const dim3 g2(ceil_div(wR_, 128), hR_ < 65535 ? hR_ : 65535);
    trplus_kernel<Acc, typename T::Part, Out><<<g2, 128, 0, st>>>(
        p_.get<Acc>(), iw, kw, kw, hR_, wR_, out.ptr<Out>(), out.row_stride);
    TC_CUDA_LAUNCH_CHECK();
    nf_.run(in, out, st, false);  // cuBLAS's tiles may pad with zeros: test every output
  }

 private:
  int hR_ = 0, wR_ = 0;
  std::size_t s_bytes_ = 0, p_bytes_ = 0;
  DeviceBuffer kt_, s_, p_;
  cublasHandle_t handle_ = nullptr;
  NonfiniteRepair nf_;
};

}  // namespace
}  // namespace i2t
}  // namespace cuda

std::unique_ptr<Plan> make_im2tensor_cublas_plan(const PlanRequest& r) {
  using namespace cuda::i2t;
  switch (r.precision) {
    case Precision::fp16: return std::make_unique<CublasPlan<TrFp16>>(r);
    case Precision::fp16fp32: return std::make_unique<CublasPlan<TrFp16Fp32>>(r);
    case Precision::bf16: return std::make_unique<CublasPlan<TrBf16>>(r);
    case Precision::tf32: return std::make_unique<CublasPlan<TrTf32>>(r);
    case Precision::fp32: return std::make_unique<CublasPlan<TrFp32Split>>(r);
    case Precision::fp64: return std::make_unique<CublasPlan<TrFp64>>(r);
  }
  throw ValueError("im2tensor_cublas: unknown precision");
}
}  // namespace tc
