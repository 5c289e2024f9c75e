// Per-precision arithmetic traits shared by the CUDA methods: storage type, scalar compute type,
// operand rounding (bf16, tf32), the vector of W pixels a thread carries (half2 for fp16, as the
// im2tensor paper's baselines do) and its fused multiply-add. Also generic rounding functions that
// other CUDA methods (im2tensor, FIR) can reuse so that "bf16" and "tf32" mean the same everywhere.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "core/types.hpp"
#include "cuda/runtime/common.cuh"

namespace tc {
namespace cuda {

// ---- generic rounding functions (round to nearest; tf32 ties away, as cvt.rna does) ----------
__host__ __device__ inline float round_to_bf16(float x) {
  return __bfloat162float(__float2bfloat16_rn(x));
}

__host__ __device__ inline float round_to_tf32(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  std::uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return __uint_as_float(r);
#else
  // Same rule in software: add half an ulp of the 10-bit mantissa, clear the 13 low bits.
  std::uint32_t u;
  memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;  // inf/nan unchanged
  float y;
  memcpy(&y, &u, 4);
  return y;
#endif
}

__host__ __device__ constexpr int imin(int a, int b) { return a < b ? a : b; }

// Kernels index rows and columns with int; larger shapes are refused up front.
inline void check_int_extent(const PlanRequest& r) {
  const std::int64_t lim = 0x7fffffffLL - 64;
  if (r.ih > lim || r.iw > lim || r.kh > lim || r.kw > lim || r.kh * r.kw > lim)
    throw ValueError("image or kernel dimension too large for the CUDA methods (limit 2^31 - 64)");
}

template <Precision P>
struct Prec;

// fp16: half storage, half arithmetic, two pixels per thread in a half2 (the paper's "fp16").
template <>
struct Prec<Precision::fp16> {
  using Store = __half;
  using Elem = __half;   // scalar compute / intermediate type
  using Vec = __half2;   // what one thread multiplies and accumulates: W pixels
  static constexpr int W = 2;
  __device__ static Elem load(Store x) { return x; }
  __device__ static Elem round(Elem x) { return x; }
  __device__ static Store store(Elem x) { return x; }
  __device__ static Elem from_double(double x) { return __double2half(x); }
  __device__ static Elem zero_elem() { return __float2half(0.f); }
  __device__ static Vec pack(Elem a, Elem b) { return __halves2half2(a, b); }
  __device__ static Vec splat(Elem a) { return __half2half2(a); }
  __device__ static Vec zero() { return __float2half2_rn(0.f); }
  __device__ static Elem lane(Vec v, int i) { return i ? __high2half(v) : __low2half(v); }
  __device__ static void fma(Vec& acc, Vec a, Vec k) { acc = __hfma2(a, k, acc); }
  __device__ static Vec add(Vec a, Vec b) { return __hadd2(a, b); }
  __device__ static Elem add_elem(Elem a, Elem b) { return __hadd(a, b); }
};

__device__ inline float fma_rn(float a, float b, float c) { return __fmaf_rn(a, b, c); }
__device__ inline double fma_rn(double a, double b, double c) { return __fma_rn(a, b, c); }

// Scalar precisions share one shape: W = 1, Vec = Elem.
template <class StoreT, class ElemT>
struct ScalarPrec {
  using Store = StoreT;
  using Elem = ElemT;
  using Vec = ElemT;
  static constexpr int W = 1;
  __device__ static Elem zero_elem() { return Elem(0); }
  __device__ static Vec pack(Elem a, Elem) { return a; }
  __device__ static Vec splat(Elem a) { return a; }
  __device__ static Vec zero() { return Elem(0); }
  __device__ static Elem lane(Vec v, int) { return v; }
  __device__ static void fma(Vec& acc, Vec a, Vec k) { acc = fma_rn(a, k, acc); }
  __device__ static Vec add(Vec a, Vec b) { return a + b; }
  __device__ static Elem add_elem(Elem a, Elem b) { return a + b; }
};

// fp16fp32: half operands (their product is exact in fp32), fp32 accumulation, half result.
template <>
struct Prec<Precision::fp16fp32> : ScalarPrec<__half, float> {
  __device__ static float load(__half x) { return __half2float(x); }
  __device__ static float round(float x) { return x; }
  __device__ static __half store(float x) { return __float2half_rn(x); }
  __device__ static float from_double(double x) { return __half2float(__double2half(x)); }
};

// bf16: float storage, operands rounded to bf16 on the device, fp32 accumulation.
template <>
struct Prec<Precision::bf16> : ScalarPrec<float, float> {
  __device__ static float load(float x) { return round_to_bf16(x); }
  __device__ static float round(float x) { return round_to_bf16(x); }
  __device__ static float store(float x) { return x; }
  __device__ static float from_double(double x) { return round_to_bf16(static_cast<float>(x)); }
};

// tf32: float storage, operands rounded to tf32 (cvt.rna.tf32.f32), fp32 accumulation.
template <>
struct Prec<Precision::tf32> : ScalarPrec<float, float> {
  __device__ static float load(float x) { return round_to_tf32(x); }
  __device__ static float round(float x) { return round_to_tf32(x); }
  __device__ static float store(float x) { return x; }
  __device__ static float from_double(double x) { return round_to_tf32(static_cast<float>(x)); }
};

template <>
struct Prec<Precision::fp32> : ScalarPrec<float, float> {
  __device__ static float load(float x) { return x; }
  __device__ static float round(float x) { return x; }
  __device__ static float store(float x) { return x; }
  __device__ static float from_double(double x) { return static_cast<float>(x); }
};

template <>
struct Prec<Precision::fp64> : ScalarPrec<double, double> {
  __device__ static double load(double x) { return x; }
  __device__ static double round(double x) { return x; }
  __device__ static double store(double x) { return x; }
  __device__ static double from_double(double x) { return x; }
};

template <Precision P>
struct PrecTag {
  static constexpr Precision value = P;
};

// Calls f(PrecTag<P>{}) for the runtime precision p (all branches must return the same type).
template <class F>
decltype(auto) with_precision(Precision p, F&& f) {
  switch (p) {
    case Precision::fp16: return f(PrecTag<Precision::fp16>{});
    case Precision::fp16fp32: return f(PrecTag<Precision::fp16fp32>{});
    case Precision::bf16: return f(PrecTag<Precision::bf16>{});
    case Precision::tf32: return f(PrecTag<Precision::tf32>{});
    case Precision::fp32: return f(PrecTag<Precision::fp32>{});
    case Precision::fp64: break;
  }
  return f(PrecTag<Precision::fp64>{});
}

template <Precision P>
__global__ void coefficients_kernel(const double* k, typename Prec<P>::Vec* out, std::int64_t n) {
  std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = Prec<P>::splat(Prec<P>::from_double(k[i]));
}

// Kernel coefficients (host float64) converted on the device by the same rounding the operands
// get, as Vec (splatted over the W lanes), into a device buffer of n Vecs.
template <Precision P>
void upload_coefficients(const double* host, std::int64_t n, DeviceBuffer& dst) {
  using Vec = typename Prec<P>::Vec;
  DeviceBuffer staging(n * sizeof(double));
  staging.upload(host, n * sizeof(double));
  dst.ensure(n * sizeof(Vec));
  coefficients_kernel<P><<<ceil_div(n, 256), 256>>>(staging.get<double>(), dst.get<Vec>(), n);
  TC_CUDA_LAUNCH_CHECK();
  TC_CUDA_CHECK(cudaStreamSynchronize(nullptr));
}

}  // namespace cuda
}  // namespace tc
