// NaN interpolation of astropy.convolution (tensorconv.astropy): the second half of
// out = sum_valid(w x) / sum_valid(w), after a correlation method has computed the numerator
// `top` over the image with its invalid pixels zeroed.
//
// The weight sum is not a second sweep: sum_valid(w) = ksum - S, where S (the weight of the
// invalid pixels under each window) is a sparse scatter of kh*kw adds per invalid pixel. Where
// that difference cancels (|ksum - S| < tau * sum|w|, e.g. beside NaN blocks larger than the
// kernel) both sums are recomputed over the window in astropy's own order (row-major over the
// image window, no fused multiply-add), so those pixels equal astropy's float64 result exactly,
// including its rule for windows without valid weight.
#pragma once
#include <cstdint>
#include <limits>

#include "../core/types.hpp"

namespace tc {

struct NanInterpArgs {
  const void* p0 = nullptr;           // padded image, invalid pixels set to 0 (storage dtype)
  std::int64_t p_rows = 0, p_cols = 0, p_stride = 0;
  const std::uint8_t* invalid = nullptr;  // padded shape, row stride p_cols (nonzero: invalid)
  const std::int64_t* nan_idx = nullptr;  // flat indices r * p_cols + c of the invalid pixels
  std::int64_t n_nan = 0;             // (ascending on the CPU)
  const std::int64_t* n_nan_dev = nullptr;  // GPU: the count in device memory (nan_mark's)
  const double* kernel = nullptr;     // correlation weights kh x kw (on the data's device)
  std::int64_t kh = 0, kw = 0;
  void* s = nullptr;                  // GPU: out_rows x out_cols, zeroed by the caller (CPU: own);
  bool s_f32 = false;                 // float (f32 data: half the traffic) or double
  std::int64_t* nan_results = nullptr;  // GPU: += number of NaN results (astropy's warning)
  void* top = nullptr;                // in: numerator; out: result (storage dtype)
  std::int64_t out_rows = 0, out_cols = 0, out_stride = 0;
  DType dtype = DType::f64;           // f32 or f64
  double ksum = 0, abs_ksum = 0;      // sum of weights (astropy's order), sum of |weights|
  double scale = 1, tau = 0.25;       // result = top * scale / (ksum - S)
  // mode 0 (convolve): a window of zero valid weight gives its centre pixel (NaN if invalid).
  // mode 1 (convolve_fft): weight = (ksum - S) / wnorm below `floor` gives `floor_value`.
  int mode = 0;
  double wnorm = 1, floor = 0, floor_value = 0;
  bool on_device = false;
  std::uintptr_t stream = 0;
};

// CPU: returns the number of NaN results; GPU (a.on_device): launches, returns -1.
std::int64_t nan_interp(const NanInterpArgs& a);
#ifdef TC_WITH_CUDA
void nan_interp_cuda(const NanInterpArgs& a);
// GPU, one pass over the padded image p (f32/f64, row stride `stride`): invalid pixels (NaN, or
// NaN and +-inf when `nonfinite`) set to 0 in place, flagged in `invalid` (rows x cols) and
// appended (unordered) to idx, *count (zeroed by the caller) their number: no host sync.
void nan_mark_cuda(void* p, std::int64_t rows, std::int64_t cols, std::int64_t stride, DType dtype,
                   std::uint8_t* invalid, std::int64_t* idx, std::int64_t* count, bool nonfinite,
                   std::uintptr_t stream);
#endif

}  // namespace tc

// ---- per-pixel finish, shared by the CPU loop and the CUDA kernel ---------------------------
#if defined(__CUDACC__)
#define TC_NI_HD __host__ __device__ __forceinline__
#else
#define TC_NI_HD inline
#endif

namespace tc::nan_interp_detail {

// a * b + c rounded twice, as astropy's C loop computes it (never contracted to an FMA).
TC_NI_HD double mul_add(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(__dmul_rn(a, b), c);
#else
  volatile double p = a * b;  // volatile: no contraction whatever the host compiler's flags
  return p + c;
#endif
}

TC_NI_HD double add(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

TC_NI_HD double quiet_nan() {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(0x7ff8000000000000LL);
#else
  return std::numeric_limits<double>::quiet_NaN();
#endif
}

// The result at output (i, j) from its numerator `top` and the scattered invalid weight s.
template <class T>
TC_NI_HD T finish(const NanInterpArgs& a, const T* p0, std::int64_t i, std::int64_t j, T top,
                  double s) {
  double bot = a.ksum - s;
  double num = static_cast<double>(top);
  if (!(bot >= a.tau * a.abs_ksum || bot <= -a.tau * a.abs_ksum)) {
    // cancellation (or NaN): both sums again over the window, in astropy's order
    num = 0.0;
    bot = 0.0;
    for (std::int64_t u = 0; u < a.kh; ++u) {
      const T* row = p0 + (i + u) * a.p_stride + j;
      const std::uint8_t* inv = a.invalid + (i + u) * a.p_cols + j;
      const double* w = a.kernel + u * a.kw;
      for (std::int64_t v = 0; v < a.kw; ++v) {
        if (!inv[v]) {
          num = mul_add(static_cast<double>(row[v]), w[v], num);
          bot = add(w[v], bot);
        }
      }
    }
  }
  if (a.mode == 0) {
    if (bot == 0.0) {  // astropy: no valid weight -> the centre pixel itself (then scaled
      // like every output when the kernel is not normalized)
      const std::int64_t ci = (i + a.kh / 2) * a.p_cols + j + a.kw / 2;
      const std::int64_t cs = (i + a.kh / 2) * a.p_stride + j + a.kw / 2;
      return a.invalid[ci] ? static_cast<T>(quiet_nan())
                           : static_cast<T>(static_cast<double>(p0[cs]) * a.scale);
    }
    return static_cast<T>(num / bot * a.scale);
  }
  if (bot / a.wnorm < a.floor) return static_cast<T>(a.floor_value);
  return static_cast<T>(num * a.scale / bot);
}

}  // namespace tc::nan_interp_detail
