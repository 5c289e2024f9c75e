// cuFFT plumbing shared by the fft method's two forms (fft.cu: 2-D transform pair, fft_rows.cu:
// row transforms around a direct product down the columns): error checks that name the cuFFT
// result, per-precision transform types, a plan whose work area the method owns (reported by
// workspace_bytes), the process-wide shared plans (SharedCufft, below), and cuFFT's fast sizes.
#pragma once
#include <cufft.h>
#include <cufftXt.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "cuda/runtime/common.cuh"
#include "cuda/runtime/precision.cuh"

namespace tc {
namespace cuda {

inline const char* cufft_name(cufftResult r) {
  switch (r) {
    case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN";
    case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED";
    case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE";
    case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
    case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED";
    case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
    case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE";
    case CUFFT_NOT_SUPPORTED: return "CUFFT_NOT_SUPPORTED";
    default: return "cuFFT error";
  }
}

[[noreturn]] inline void throw_cufft(cufftResult r, const char* what, const char* file, int line) {
  cudaError_t e = cudaGetLastError();
  std::string msg = std::string("cuFFT error ") + cufft_name(r) + " (" + std::to_string(int(r)) +
                    ") in " + what + " at " + file + ":" + std::to_string(line);
  if (e != cudaSuccess) msg += std::string("; CUDA: ") + cudaGetErrorString(e);
  if (r == CUFFT_ALLOC_FAILED || e == cudaErrorMemoryAllocation)
    throw OutOfMemory("out of device memory: " + msg);
  throw DeviceError(msg);
}

#define TC_CUFFT_CHECK(expr)                                                           \
  do {                                                                                 \
    cufftResult tc_fr_ = (expr);                                                       \
    if (tc_fr_ != CUFFT_SUCCESS) ::tc::cuda::throw_cufft(tc_fr_, #expr, __FILE__, __LINE__); \
  } while (0)

// Transform types per precision: Real/Cplx in device memory and cuFFT's data types.
template <Precision P>
struct Fft {
  using Real = float;
  using Cplx = float2;
  static constexpr cudaDataType rtype = CUDA_R_32F, ctype = CUDA_C_32F;
  static constexpr bool scaled = false;
};
template <>
struct Fft<Precision::fp16> {
  using Real = __half;
  using Cplx = __half2;
  static constexpr cudaDataType rtype = CUDA_R_16F, ctype = CUDA_C_16F;
  static constexpr bool scaled = true;
};
template <>
struct Fft<Precision::fp64> {
  using Real = double;
  using Cplx = double2;
  static constexpr cudaDataType rtype = CUDA_R_64F, ctype = CUDA_C_64F;
  static constexpr bool scaled = false;
};

// Image z of a group (in + z * in_bstride, ih x iw, rows `stride` apart) into transform slab z
// (n x m, rows m apart), zero beyond the image: fft's per-image stacks, fft_rows' staged rows.
template <Precision P>
__global__ void pad_stack_kernel(const typename Prec<P>::Store* __restrict__ in,
                                 std::int64_t in_bstride, std::int64_t stride, int ih, int iw,
                                 typename Fft<P>::Real* __restrict__ buf, int n, int m) {
  const typename Prec<P>::Store* src = in + static_cast<std::int64_t>(blockIdx.z) * in_bstride;
  typename Fft<P>::Real* dst = buf + static_cast<std::int64_t>(blockIdx.z) * n * m;
  for (int y = blockIdx.y; y < n; y += gridDim.y)
    for (int x = blockIdx.x * blockDim.x + threadIdx.x; x < m; x += gridDim.x * blockDim.x) {
      typename Fft<P>::Real v = 0;
      if (y < ih && x < iw) v = static_cast<typename Fft<P>::Real>(src[y * stride + x]);
      dst[static_cast<std::int64_t>(y) * m + x] = v;
    }
}

// A cuFFT plan whose work area we own, so that workspace_bytes() can report it.
class CufftPlan {
 public:
  CufftPlan() = default;
  ~CufftPlan() {
    if (h_) cufftDestroy(h_);
  }
  CufftPlan(const CufftPlan&) = delete;
  CufftPlan& operator=(const CufftPlan&) = delete;
  // batch transforms of contiguous n0 x n1 arrays (out-of-place: dense input and output).
  std::size_t make(long long n0, long long n1, cudaDataType in, cudaDataType out,
                   cudaDataType exec, bool own_work, long long batch = 1) {
    TC_CUFFT_CHECK(cufftCreate(&h_));
    if (own_work) TC_CUFFT_CHECK(cufftSetAutoAllocation(h_, 0));
    long long n[2] = {n0, n1};
    std::size_t ws = 0;
    TC_CUFFT_CHECK(cufftXtMakePlanMany(h_, 2, n, nullptr, 1, 0, in, nullptr, 1, 0, out, batch,
                                       &ws, exec));
    return ws;
  }
  // batch 1-D transforms of length n along rows idist (input) / odist (output) elements apart.
  std::size_t make_rows(long long n, long long idist, long long odist, cudaDataType in,
                        cudaDataType out, cudaDataType exec, bool own_work, long long batch) {
    TC_CUFFT_CHECK(cufftCreate(&h_));
    if (own_work) TC_CUFFT_CHECK(cufftSetAutoAllocation(h_, 0));
    long long nn[1] = {n}, ie[1] = {idist}, oe[1] = {odist};
    std::size_t ws = 0;
    TC_CUFFT_CHECK(cufftXtMakePlanMany(h_, 1, nn, ie, 1, idist, in, oe, 1, odist, out, batch,
                                       &ws, exec));
    return ws;
  }
  cufftHandle get() const { return h_; }

 private:
  cufftHandle h_ = 0;
};

// ---- shared cuFFT plans ----------------------------------------------------------------------
// One transform as cufftXtMakePlanMany takes it: rank 2 (n0 x n1, dense) or rank 1 (length n1,
// rows idist / odist elements apart), data types, batch.
struct CufftSpec {
  int rank = 0;  // 0: none (a group of one handle)
  long long n0 = 0, n1 = 0, idist = 0, odist = 0, batch = 1;
  cudaDataType in = CUDA_R_32F, out = CUDA_C_32F, exec = CUDA_C_32F;
  bool operator<(const CufftSpec& o) const;
  bool operator==(const CufftSpec& o) const { return !(*this < o) && !(o < *this); }
};
inline CufftSpec spec2d(long long n0, long long n1, cudaDataType in, cudaDataType out,
                        cudaDataType exec, long long batch = 1) {
  CufftSpec s;
  s.rank = 2, s.n0 = n0, s.n1 = n1, s.batch = batch, s.in = in, s.out = out, s.exec = exec;
  return s;
}
inline CufftSpec spec_rows(long long n, long long idist, long long odist, cudaDataType in,
                           cudaDataType out, cudaDataType exec, long long batch) {
  CufftSpec s;
  s.rank = 1, s.n1 = n, s.idist = idist, s.odist = odist, s.batch = batch;
  s.in = in, s.out = out, s.exec = exec;
  return s;
}

// A group of one or two cuFFT plans (a forward and an inverse transform that run in turn) and
// the one work area they share, kept process-wide per (device, specs) and reference counted:
// every tensorconv plan of the same transform shapes, types and batch on a device holds the same
// group (SharedCufft::get), so a new kernel on a seen shape plans nothing and allocates no work
// area; the group is destroyed with the last plan holding it (the registry keeps weak
// references). Each tensorconv plan keeps its own data buffers (images, spectra).
//
// The rule for the shared work area: it is only touched inside a Use, which (1) holds the
// group's mutex while the caller enqueues its transforms (host side: microseconds, no host
// synchronisation), (2) sets every handle's stream to the caller's, (3) makes that stream wait
// for the event recorded at the end of the previous Use when that was on another stream, and
// (4) records the event on the caller's stream when it ends. So uses of one work area are
// ordered on the GPU (in the order their Uses were taken) even from different streams and
// threads: a use on stream B never overlaps one on stream A. The price: two streams running the
// same transform shape serialise their transforms (not their other kernels).
class SharedCufft {
 public:
  static std::shared_ptr<SharedCufft> get(int device, const CufftSpec& a,
                                          const CufftSpec& b = CufftSpec{});
  ~SharedCufft();
  SharedCufft(const SharedCufft&) = delete;
  SharedCufft& operator=(const SharedCufft&) = delete;

  class Use {
   public:
    Use(SharedCufft& g, cudaStream_t stream);
    ~Use();
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;
    cufftHandle first() const { return g_.a_; }
    cufftHandle second() const { return g_.b_ ? g_.b_ : g_.a_; }

   private:
    SharedCufft& g_;
    std::unique_lock<std::mutex> lock_;
    cudaStream_t stream_;
  };

  std::size_t work_bytes() const { return work_.bytes(); }
  // Groups alive now, and how many times get() made a new one (tests, the docs' breakdown).
  static std::size_t live();
  static std::size_t created();

  SharedCufft(int device, const CufftSpec& a, const CufftSpec& b);  // (get's; made under its lock)

 private:
  cufftHandle a_ = 0, b_ = 0;
  DeviceBuffer work_;
  std::mutex mu_;
  cudaEvent_t done_ = nullptr;
  cudaStream_t last_ = nullptr;
  bool used_ = false;
};

inline std::int64_t next_fast_size(std::int64_t n, bool pow2) {
  n = std::max<std::int64_t>(n, 2);
  if (pow2) {
    std::int64_t p = 1;
    while (p < n) p <<= 1;
    return p;
  }
  for (std::int64_t m = n;; ++m) {
    std::int64_t r = m;
    for (int f : {2, 3, 5, 7})
      while (r % f == 0) r /= f;
    if (r == 1) return m;
  }
}


// fft by rows (fft_rows.cu): whether make_fft_plan takes it for this request (plan option
// fft.layout; automatic: real fp32 / fp64, a fast width, kh <= kFftRowsMaxTaps, where it measured
// faster than the 2-D pair), and its factory.
constexpr std::int64_t kFftRowsMaxTaps = 120;
bool fft_rows_applies(const PlanRequest& r);
std::unique_ptr<Plan> make_fft_rows_plan(const PlanRequest& r);

}  // namespace cuda
}  // namespace tc
