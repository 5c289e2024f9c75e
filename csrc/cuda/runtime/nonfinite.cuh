// NaN and ±inf stay in their own windows (scipy's rule: an output is NaN/±inf exactly when its
// window holds one, with float64's signs). Tensor-core methods multiply zero padding and the
// zero taps of bands, P tiles or decomposed terms by pixels outside an output's window, and
// 0 × inf = NaN; the 3xTF32 split turns inf into NaN (inf - inf). Such an output always comes
// out non-finite, so the repair is: recompute every non-finite output by a direct float64 sum
// over its own window (the stored pixels times the float64 kernel), which gives NaN, ±inf or
// the finite value exactly as scipy does. Finite data pay one flag test per stored output in the
// methods' epilogues (mark_nonfinite) and one near-empty launch; methods without the flag in
// their epilogues have the repair kernel read the whole output instead. Spectral methods (fft)
// cannot let a non-finite pixel into the transform (it would reach every output): their input
// staging stores 0 in its place and marks the flag; run_windows() then sets every output whose
// window holds a non-finite pixel to NaN and repairs those as above (whole-image passes, only
// when flagged: no list of positions to overflow).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/runtime/common.cuh"

namespace tc {
namespace cuda {

__device__ __forceinline__ bool nonfinite(float v) { return !(fabsf(v) <= 3.402823466e38f); }
__device__ __forceinline__ bool nonfinite(double v) { return !(fabs(v) <= 1.7976931348623157e308); }
__device__ __forceinline__ bool nonfinite(__half v) { return nonfinite(__half2float(v)); }

// In an epilogue: flag the plan's repair when a stored value is not finite (benign race: every
// writer stores 1). nf may be null (the caller's plan has no repair).
template <class V>
__device__ __forceinline__ void mark_nonfinite(int* nf, V v) {
  if (nf != nullptr && nonfinite(v)) *nf = 1;
}

class NonfiniteRepair {
 public:
  NonfiniteRepair() = default;
  // Keeps the float64 kernel and a flag word on the plan's device (not counted in the plans'
  // workspace_bytes: the kernel itself, as naive's coefficients).
  explicit NonfiniteRepair(const PlanRequest& r);
  int* flag() const { return flag_.get<int>(); }
  // Another kernel of the same shape, uploaded on the stream of the next arm(), run() or
  // run_windows().
  void set_kernel(const double* k);
  // Before the launches whose epilogues call mark_nonfinite(flag(), ...).
  void arm(cudaStream_t st) const;
  // After the method's launches: recompute the non-finite outputs. flagged: only if the flag was
  // marked (the kernel exits at once otherwise); else every output is tested.
  void run(const Tensor2D& in, const Tensor2D& out, cudaStream_t st, bool flagged) const;
  // After a method that read every non-finite input pixel as 0 and marked flag() (fft): if the
  // flag is set, every output whose window holds a non-finite pixel of `in` becomes NaN, then
  // run(in, out, st, true) recomputes it (and any other non-finite output). Two near-empty
  // launches when the flag is clear.
  void run_windows(const Tensor2D& in, const Tensor2D& out, cudaStream_t st) const;

 private:
  void flush(cudaStream_t st) const;  // set_kernel's kernel to the device, if one is pending
  DeviceBuffer k_, flag_;
  mutable PendingKernel pending_;  // set_kernel's kernel until the next call uploads it
  int kh_ = 0, kw_ = 0, blocks_ = 0;
};

}  // namespace cuda
}  // namespace tc
