// "fft" (the im2tensor paper's CUFFT baseline): valid correlation as a product of spectra.
// Real fp32 / fp64 images with a fast width and kh <= kFftRowsMaxTaps take fft_rows.cu's form
// instead (row transforms around a direct product down the columns; make_fft_plan below, plan
// option fft.layout); what follows is the 2-D transform pair every other request runs.
// With a transform size N x M >= the image (a fast 2^a 3^b 5^c 7^d size; a power of two for
// fp16, which is what cuFFT's half transforms accept), the circular correlation
// IFFT(FFT(x) * conj(FFT(k))) equals the valid correlation wherever i + u < N, i.e. everywhere
// valid, so no padding beyond the image is needed. The kernel's spectrum (conjugated, scaled)
// is computed once per plan, on the device, on the stream of the plan's first call (fp16: at
// construction): the kernel is copied into the plan's own transform buffer, transformed by the
// shared forward plan and scaled; no temporary allocation, no host synchronisation.
//
// cuFFT plans and their work area are shared process-wide (cufft_util.cuh: SharedCufft): plans
// of the same transform size, batch and precision on a device hold one forward/inverse group,
// so a new kernel on a seen shape plans nothing. Transforms run inside a SharedCufft::Use
// (stream set per run; uses of the shared work area ordered across streams by an event).
//
// Precisions: fp32 and fp64 run cuFFT in that precision; fp16fp32 stores half and transforms in
// fp32; fp16 transforms in half (cufftXt). fp16 spectra would overflow half (the DC term of a
// 4096^2 image in [0, 1] is ~8e6), so the image is scaled on the device by a power of two taken
// from its largest magnitude, and the kernel's spectrum (computed in fp32) by a power of two from
// sum|k|; the crop undoes both exactly. Complex data (fp32/fp64) runs C2C transforms
// (FftComplexPlan, below).
//
// Workspace: where the whole-image transform would need more than kFftCapBytes (8192^2 fp32 and
// up), real images run by overlap-save instead: tiles of T x T (T = 2048, or 4x the kernel) at
// a stride of T - k + 1, gathered in batches of B tiles, one batched R2C / product / C2R per
// batch, each tile's valid T - k + 1 square scattered to the output. The kernel spectrum is then
// T x (T/2 + 1), and the workspace O(B T^2) whatever the image size.
//
// NaN and ±inf stay local (scipy's rule), with no host test: the staging that copies the image
// into the transform buffer (pad / tile gather) stores 0 for a non-finite pixel and marks the
// plan's NonfiniteRepair flag, and after the crop its run_windows() sets every output whose
// window holds such a pixel to NaN and recomputes those by a direct float64 sum (nonfinite.cuh).
// The crop also marks non-finite results (overflow, a non-finite kernel, or every output when an
// image that is already the transform's input holds one), which the same pass recomputes.
// Finite images pay three near-empty launches. Complex data (FftComplexPlan) still spreads
// NaN/inf over the image.
//
// Per-image kernels (PlanRequest::kernel_count = K > 1; real fp16fp32 / fp32 / fp64 device
// stacks, whole-image transforms): the K kernels are transformed at plan time by one batched
// R2C into K conjugated, scaled spectra; a stack then runs in groups of G images (as many as
// kFftBatchBytes of buffers hold): one batched pad, one batched R2C, one pointwise product in
// which image b takes spectrum b % K, one batched C2R and one batched crop per group. This path
// has no non-finite repair: a NaN/inf pixel spreads over its image's output.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/factories.hpp"
#include "cuda/runtime/common.cuh"
#include "cuda/runtime/cufft_util.cuh"
#include "cuda/runtime/nonfinite.cuh"
#include "cuda/runtime/precision.cuh"

namespace tc {
namespace cuda {
namespace {

// ---- device kernels ------------------------------------------------------------------------
template <class Store>
__global__ void __launch_bounds__(256) absmax_kernel(const Store* __restrict__ in,
                                                     std::int64_t stride, int rows, int cols,
                                                     unsigned* __restrict__ result) {
  // non-finite pixels are skipped: the staging stores 0 for them (the repair recomputes theirs)
  auto pick = [](float a, float b) { return (b > a && b <= 3.402823466e38f) ? b : a; };
  float m = 0.f;
  for (int y = blockIdx.y; y < rows; y += gridDim.y)
    for (int x = blockIdx.x * blockDim.x + threadIdx.x; x < cols; x += gridDim.x * blockDim.x)
      m = pick(m, fabsf(static_cast<float>(in[y * stride + x])));
  for (int o = 16; o > 0; o >>= 1) m = pick(m, __shfl_xor_sync(0xffffffffu, m, o));
  __shared__ float warp_max[8];
  if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x >> 5] = m;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < 8; ++w) m = pick(m, warp_max[w]);
    // One atomic per block (per-warp atomics on one word serialize: ~0.4 ms at 4096^2).
    // Non-negative floats order like unsigned integers.
    atomicMax(result, __float_as_uint(m));
  }
}

// Power-of-two image scale keeping every fp16 spectrum value below 2^15 (see the header).
__device__ inline float image_scale(const unsigned* amax_bits, double nm) {
  if (!amax_bits) return 1.f;
  const float amax = __uint_as_float(*amax_bits);
  if (!(amax > 0.f) || !isfinite(amax)) return 1.f;
  return exp2f(floorf(log2f(static_cast<float>(32768.0 / nm) / amax)));
}

// One pixel into the transform's type (scaled for fp16); a non-finite one is 0 and marks nf.
template <Precision P>
__device__ __forceinline__ typename Fft<P>::Real stage(typename Prec<P>::Store p, float s, int* nf) {
  if (nonfinite(p)) {
    *nf = 1;  // benign race: every writer stores 1
    return typename Fft<P>::Real(0);
  }
  if constexpr (Fft<P>::scaled)
    return __float2half_rn(__half2float(p) * s);
  else
    return static_cast<typename Fft<P>::Real>(p);
}

template <Precision P>
__global__ void pad_kernel(const typename Prec<P>::Store* __restrict__ in, std::int64_t stride,
                           int ih, int iw, typename Fft<P>::Real* __restrict__ buf, int n, int m,
                           const unsigned* amax_bits, int* nf) {
  const float s = image_scale(amax_bits, double(n) * m);
  for (int y = blockIdx.y; y < n; y += gridDim.y)
    for (int x = blockIdx.x * blockDim.x + threadIdx.x; x < m; x += gridDim.x * blockDim.x) {
      typename Fft<P>::Real v = 0;
      if (y < ih && x < iw) v = stage<P>(in[y * stride + x], s, nf);
      buf[static_cast<std::int64_t>(y) * m + x] = v;
    }
}

template <class Cplx>
__device__ inline Cplx cmul(Cplx a, Cplx b) {
  return {a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x};
}
__device__ inline __half2 cmul(__half2 a, __half2 b) {  // products in fp32, rounded once
  const float2 x = __half22float2(a), y = __half22float2(b);
  return __floats2half2_rn(x.x * y.x - x.y * y.y, x.x * y.y + x.y * y.x);
}

template <class Cplx>
__global__ void multiply_kernel(Cplx* __restrict__ x, const Cplx* __restrict__ k, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    x[i] = cmul(x[i], k[i]);
}

template <Precision P>
__global__ void crop_kernel(const typename Fft<P>::Real* __restrict__ buf, int m,
                            typename Prec<P>::Store* __restrict__ out, std::int64_t stride,
                            int oh, int ow, const unsigned* amax_bits, double nm, float kscale,
                            int* nf) {
  float undo = 1.f;
  if constexpr (Fft<P>::scaled) undo = 1.f / (image_scale(amax_bits, nm) * kscale * float(nm));
  for (int y = blockIdx.y; y < oh; y += gridDim.y)
    for (int x = blockIdx.x * blockDim.x + threadIdx.x; x < ow; x += gridDim.x * blockDim.x) {
      const auto v = buf[static_cast<std::int64_t>(y) * m + x];
      typename Prec<P>::Store o;
      if constexpr (Fft<P>::scaled)
        o = __float2half_rn(__half2float(v) * undo);
      else
        o = static_cast<typename Prec<P>::Store>(v);
      out[y * stride + x] = o;
      mark_nonfinite(nf, o);
    }
}

// ---- overlap-save tiles (images whose whole transform passes kFftCapBytes) ----
// Batch slot b (blockIdx.z) holds tile t0 + b: image rows oy.. and columns ox.. of an n x m tile
// (tiles of the grid `tiles_x` wide, origins at multiples of the strides sh, sw), zero outside
// the image and for slots past the last tile.
struct TileGrid {
  int n, m, sh, sw, tiles, tiles_x;
  __device__ bool origin(int t, int& oy, int& ox) const {
    if (t >= tiles) return false;
    oy = (t / tiles_x) * sh;
    ox = (t % tiles_x) * sw;
    return true;
  }
};

template <Precision P>
__global__ void tile_gather_kernel(const typename Prec<P>::Store* __restrict__ in,
                                   std::int64_t stride, int ih, int iw,
                                   typename Fft<P>::Real* __restrict__ buf, TileGrid tg, int t0,
                                   const unsigned* amax_bits, int* nf) {
  const float s = image_scale(amax_bits, double(tg.n) * tg.m);
  int oy = 0, ox = 0;
  const bool live = tg.origin(t0 + static_cast<int>(blockIdx.z), oy, ox);
  typename Fft<P>::Real* dst = buf + static_cast<std::int64_t>(blockIdx.z) * tg.n * tg.m;
  for (int y = blockIdx.y; y < tg.n; y += gridDim.y)
    for (int x = blockIdx.x * blockDim.x + threadIdx.x; x < tg.m; x += gridDim.x * blockDim.x) {
      typename Fft<P>::Real v = 0;
      const int gy = oy + y, gx = ox + x;
      if (live && gy < ih && gx < iw) v = stage<P>(in[gy * stride + gx], s, nf);
      dst[static_cast<std::int64_t>(y) * tg.m + x] = v;
    }
}

// Every batch slot's spectrum (nk values each, blockIdx.y = slot) times the kernel's.
template <class Cplx>
__global__ void multiply_tiles_kernel(Cplx* __restrict__ x, const Cplx* __restrict__ k,
                                      std::int64_t nk) {
  Cplx* xs = x + static_cast<std::int64_t>(blockIdx.y) * nk;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < nk;
       i += std::int64_t(gridDim.x) * blockDim.x)
    xs[i] = cmul(xs[i], k[i]);
}

template <Precision P>
__global__ void tile_scatter_kernel(const typename Fft<P>::Real* __restrict__ buf, TileGrid tg,
                                    int t0, typename Prec<P>::Store* __restrict__ out,
                                    std::int64_t stride, int oh, int ow,
                                    const unsigned* amax_bits, float kscale, int* nf) {
  const double nm = double(tg.n) * tg.m;
  float undo = 1.f;
  if constexpr (Fft<P>::scaled) undo = 1.f / (image_scale(amax_bits, nm) * kscale * float(nm));
  int oy = 0, ox = 0;
  if (!tg.origin(t0 + static_cast<int>(blockIdx.z), oy, ox)) return;
  const typename Fft<P>::Real* src = buf + static_cast<std::int64_t>(blockIdx.z) * tg.n * tg.m;
  const int rows = min(tg.sh, oh - oy), cols = min(tg.sw, ow - ox);
  for (int y = blockIdx.y; y < rows; y += gridDim.y)
    for (int x = blockIdx.x * blockDim.x + threadIdx.x; x < cols; x += gridDim.x * blockDim.x) {
      const auto v = src[static_cast<std::int64_t>(y) * tg.m + x];
      typename Prec<P>::Store o;
      if constexpr (Fft<P>::scaled)
        o = __float2half_rn(__half2float(v) * undo);
      else
        o = static_cast<typename Prec<P>::Store>(v);
      out[(oy + y) * stride + ox + x] = o;
      mark_nonfinite(nf, o);
    }
}

// conj(F) * scale, into the plan's complex type.
template <class Src, class Cplx>
__global__ void finish_spectrum_kernel(const Src* __restrict__ f, Cplx* __restrict__ k,
                                       std::int64_t n, double scale) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    if constexpr (std::is_same<Cplx, __half2>::value)
      k[i] = __floats2half2_rn(float(f[i].x * scale), float(-f[i].y * scale));
    else
      k[i] = Cplx{static_cast<decltype(Cplx::x)>(f[i].x * scale),
                  static_cast<decltype(Cplx::x)>(-f[i].y * scale)};
  }
}

// ---- per-image kernels: stacks, blockIdx.z = image of the group (pad_stack_kernel:
// cufft_util.cuh) ----

// Slab y of the group (image b0 + y of the stack) times spectrum (b0 + y) % kernels.
template <class Cplx>
__global__ void multiply_stack_kernel(Cplx* __restrict__ x, const Cplx* __restrict__ k,
                                      std::int64_t nk, std::int64_t b0, std::int64_t kernels) {
  Cplx* xs = x + static_cast<std::int64_t>(blockIdx.y) * nk;
  const Cplx* ks = k + ((b0 + blockIdx.y) % kernels) * nk;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < nk;
       i += std::int64_t(gridDim.x) * blockDim.x)
    xs[i] = cmul(xs[i], ks[i]);
}

template <Precision P>
__global__ void crop_stack_kernel(const typename Fft<P>::Real* __restrict__ buf, int n, int m,
                                  typename Prec<P>::Store* __restrict__ out,
                                  std::int64_t out_bstride, std::int64_t stride, int oh, int ow) {
  const typename Fft<P>::Real* src = buf + static_cast<std::int64_t>(blockIdx.z) * n * m;
  typename Prec<P>::Store* dst = out + static_cast<std::int64_t>(blockIdx.z) * out_bstride;
  for (int y = blockIdx.y; y < oh; y += gridDim.y)
    for (int x = blockIdx.x * blockDim.x + threadIdx.x; x < ow; x += gridDim.x * blockDim.x)
      dst[y * stride + x] = static_cast<typename Prec<P>::Store>(
          src[static_cast<std::int64_t>(y) * m + x]);
}

// Kernel z of the packed stack (kh x kw each) at the origin of zeroed slab z (n x m).
template <class KReal>
__global__ void place_kernels_kernel(const KReal* __restrict__ packed, int kh, int kw,
                                     KReal* __restrict__ slabs, int n, int m,
                                     std::int64_t kernels) {
  for (std::int64_t z = blockIdx.z; z < kernels; z += gridDim.z)
    for (int y = blockIdx.y; y < kh; y += gridDim.y)
      for (int x = threadIdx.x; x < kw; x += blockDim.x)
        slabs[z * n * m + static_cast<std::int64_t>(y) * m + x] = packed[(z * kh + y) * kw + x];
}

// Whole-image transforms up to this much device memory (8192^2 fp32 takes tiles), tiles of
// kTile^2, kFftBatchBytes of tile buffers per batch.
constexpr std::size_t kFftCapBytes = std::size_t(1) << 30;
constexpr std::int64_t kTile = 2048;
constexpr std::int64_t kFftBatchBytes = std::int64_t(512) << 20;

dim3 grid2d(std::int64_t cols, std::int64_t rows) {
  return dim3(std::max(1, std::min(ceil_div(cols, 256), 64)),
              static_cast<unsigned>(std::min<std::int64_t>(std::max<std::int64_t>(rows, 1), 65535)));
}
int grid1d(std::int64_t n) { return std::max(1, std::min(ceil_div(n, 256), 132 * 16)); }

template <Precision P>
class FftPlan final : public CudaPlan {
  using F = Fft<P>;
  using Real = typename F::Real;
  using Cplx = typename F::Cplx;
  using Store = typename Prec<P>::Store;

 public:
  explicit FftPlan(const PlanRequest& r) : CudaPlan(r), nf_(r) {
    const bool pow2 = P == Precision::fp16;
    n_ = next_fast_size(r.ih, pow2);
    m_ = next_fast_size(r.iw, pow2);
    mc_ = m_ / 2 + 1;
    if (n_ > 0x7fffffff / 2 || m_ > 0x7fffffff / 2)
      throw ValueError("image too large for the fft method");
    // Whole-image buffers + cuFFT's work area (about one spectrum) against the cap: else tiles.
    const double whole = double(n_) * m_ * sizeof(Real) + 3.0 * double(n_) * mc_ * sizeof(Cplx);
    if (kernels_ > 1) {  // per-image kernels: buffers and transforms per group (run_device_batch)
      if (F::scaled)
        throw ValueError("per-image kernels on fft take fp16fp32, fp32 or fp64 (fp16's scaled "
                         "half transforms take one kernel)");
      if (whole > double(kFftCapBytes))
        throw ValueError("per-image kernels on fft take images whose transform fits " +
                         std::to_string(kFftCapBytes >> 20) + " MB (no overlap-save tiles)");
      kspec_.reset(kernels_ * n_ * mc_ * sizeof(Cplx));
      kernel_spectra(r);
      return;
    }
    if (whole > double(kFftCapBytes)) plan_tiles(r, pow2);
    // Our buffers first: an impossible size fails here as MemoryError naming the bytes.
    real_.reset(batch_ * n_ * m_ * sizeof(Real));
    spec_.reset(batch_ * n_ * mc_ * sizeof(Cplx));
    kspec_.reset(n_ * mc_ * sizeof(Cplx));
    if (F::scaled) amax_.reset(sizeof(unsigned));
    // The forward / inverse pair (one work area: they run in turn), shared with every plan of
    // this transform on the device; the kernel's transform (batch 1, fp32 for fp16) is the
    // pair's forward one where they agree, else a group of its own.
    pair_ = SharedCufft::get(device(), spec2d(n_, m_, F::rtype, F::ctype, F::ctype, batch_),
                             spec2d(n_, m_, F::ctype, F::rtype, F::ctype, batch_));
    const CufftSpec kfwd = spec2d(n_, m_, P == Precision::fp64 ? CUDA_R_64F : CUDA_R_32F,
                                  P == Precision::fp64 ? CUDA_C_64F : CUDA_C_32F,
                                  P == Precision::fp64 ? CUDA_C_64F : CUDA_C_32F, 1);
    kplan_ = (batch_ == 1 && P != Precision::fp16) ? pair_ : SharedCufft::get(device(), kfwd);
    kernel_host(r);
    if constexpr (P == Precision::fp16) kernel_spectrum_fp16();
  }

  // Our buffers, and the shared groups' work areas in full (so the plan cache's budget is an
  // upper bound where plans share them).
  std::size_t workspace_bytes() const override {
    return (pair_ ? pair_->work_bytes() : 0) +
           (kplan_ && kplan_ != pair_ ? kplan_->work_bytes() : 0) + work_.bytes() +
           real_.bytes() + spec_.bytes() + kspec_.bytes() + amax_.bytes();
  }

 protected:
  void run_device_batch(const Tensor2D& in, std::int64_t in_batch_stride, const Tensor2D& out,
                        std::int64_t out_batch_stride, std::int64_t batch,
                        cudaStream_t stream) override {
    if (kernels_ == 1) {  // one kernel: image after image (tiles and repair included)
      CudaPlan::run_device_batch(in, in_batch_stride, out, out_batch_stride, batch, stream);
      return;
    }
    const std::int64_t per = n_ * m_ * sizeof(Real) + n_ * mc_ * sizeof(Cplx);
    const std::int64_t g = std::min<std::int64_t>(
        batch, std::max<std::int64_t>(1, std::min<std::int64_t>(kFftBatchBytes / per, 65535)));
    make_group(g);
    const int n = static_cast<int>(n_), m = static_cast<int>(m_);
    const int ih = static_cast<int>(in.rows), iw = static_cast<int>(in.cols);
    const int oh = static_cast<int>(out.rows), ow = static_cast<int>(out.cols);
    const std::size_t es = dtype_size(in.dtype);
    TC_CUFFT_CHECK(cufftSetStream(gfwd_->get(), stream));
    TC_CUFFT_CHECK(cufftSetStream(ginv_->get(), stream));
    for (std::int64_t b0 = 0; b0 < batch; b0 += g) {
      const unsigned gb = static_cast<unsigned>(std::min(g, batch - b0));
      dim3 gp = grid2d(m, std::min(n, 256));
      gp.z = gb;
      pad_stack_kernel<P><<<gp, 256, 0, stream>>>(
          reinterpret_cast<const Store*>(static_cast<const char*>(in.data) +
                                         b0 * in_batch_stride * es),
          in_batch_stride, in.row_stride, ih, iw, real_.get<Real>(), n, m);
      TC_CUDA_LAUNCH_CHECK();
      // the group's plan transforms all g slabs; past gb they hold no image of this call
      TC_CUFFT_CHECK(cufftXtExec(gfwd_->get(), real_.get(), spec_.get(), CUFFT_FORWARD));
      const dim3 gm(std::max(1, std::min(ceil_div(n_ * mc_, 256), 1024)), gb);
      multiply_stack_kernel<Cplx><<<gm, 256, 0, stream>>>(spec_.get<Cplx>(), kspec_.get<Cplx>(),
                                                          n_ * mc_, b0, kernels_);
      TC_CUDA_LAUNCH_CHECK();
      TC_CUFFT_CHECK(cufftXtExec(ginv_->get(), spec_.get(), real_.get(), CUFFT_INVERSE));
      dim3 gc = grid2d(ow, std::min(oh, 256));
      gc.z = gb;
      crop_stack_kernel<P><<<gc, 256, 0, stream>>>(
          real_.get<Real>(), n, m,
          reinterpret_cast<Store*>(static_cast<char*>(out.data) + b0 * out_batch_stride * es),
          out_batch_stride, out.row_stride, oh, ow);
      TC_CUDA_LAUNCH_CHECK();
    }
  }

  void run_device(const Tensor2D& in, const Tensor2D& out, cudaStream_t stream) override {
    const int ih = static_cast<int>(in.rows), iw = static_cast<int>(in.cols);
    const int n = static_cast<int>(n_), m = static_cast<int>(m_);
    const unsigned* amax = nullptr;
    if (!kspec_ready_) kernel_spectrum(stream);
    nf_.arm(stream);
    if constexpr (F::scaled) {
      TC_CUDA_CHECK(cudaMemsetAsync(amax_.get(), 0, sizeof(unsigned), stream));
      const dim3 agrid(std::min(ceil_div(iw, 256), 4), std::min(ih, 1024));
      absmax_kernel<Store><<<agrid, 256, 0, stream>>>(in.ptr<Store>(), in.row_stride,
                                                               ih, iw, amax_.get<unsigned>());
      TC_CUDA_LAUNCH_CHECK();
      amax = amax_.get<unsigned>();
    }
    if (tg_.tiles > 0) {
      run_tiles(in, out, stream, amax);
      nf_.run_windows(in, out, stream);
      return;
    }
    // The image itself is the transform's input when it already has the transform's shape (no
    // copy: finite images pay nothing). A non-finite pixel then reaches every output, the crop
    // marks them all, and the repair recomputes the whole output directly: correct, and slow only
    // for such images (~3 ms at 4096^2, k = 55). Otherwise the staging copy zeroes it (header).
    const bool direct = std::is_same<Real, Store>::value && !F::scaled && ih == n && iw == m &&
                        in.row_stride == m;
    void* src = in.data;
    if (!direct) {
      pad_kernel<P><<<grid2d(m, n), 256, 0, stream>>>(in.ptr<Store>(), in.row_stride, ih, iw,
                                                      real_.get<Real>(), n, m, amax, nf_.flag());
      TC_CUDA_LAUNCH_CHECK();
      src = real_.get();
    }
    SharedCufft::Use fft(*pair_, stream);
    TC_CUFFT_CHECK(cufftXtExec(fft.first(), src, spec_.get(), CUFFT_FORWARD));
    multiply_kernel<Cplx><<<grid1d(n_ * mc_), 256, 0, stream>>>(spec_.get<Cplx>(),
                                                                kspec_.get<Cplx>(), n_ * mc_);
    TC_CUDA_LAUNCH_CHECK();
    TC_CUFFT_CHECK(cufftXtExec(fft.second(), spec_.get(), real_.get(), CUFFT_INVERSE));
    crop_kernel<P><<<grid2d(out.cols, out.rows), 256, 0, stream>>>(
        real_.get<Real>(), m, out.ptr<Store>(), out.row_stride, static_cast<int>(out.rows),
        static_cast<int>(out.cols), amax, double(n_) * double(m_), kscale_, nf_.flag());
    TC_CUDA_LAUNCH_CHECK();
    nf_.run_windows(in, out, stream);
  }

 private:
  // Overlap-save geometry: square tiles of kTile (4x the kernel if larger), as many per batch as
  // kFftBatchBytes holds, batches of equal size (the last one's extra slots are zeros).
  void plan_tiles(const PlanRequest& r, bool pow2) {
    const std::int64_t t = next_fast_size(std::max<std::int64_t>(kTile, 4 * std::max(r.kh, r.kw)), pow2);
    n_ = std::min(n_, t);
    m_ = std::min(m_, t);
    mc_ = m_ / 2 + 1;
    tg_.n = static_cast<int>(n_);
    tg_.m = static_cast<int>(m_);
    tg_.sh = static_cast<int>(n_ - r.kh + 1);
    tg_.sw = static_cast<int>(m_ - r.kw + 1);
    const std::int64_t oh = r.ih - r.kh + 1, ow = r.iw - r.kw + 1;
    tg_.tiles_x = ceil_div(ow, tg_.sw);
    const std::int64_t tiles = static_cast<std::int64_t>(ceil_div(oh, tg_.sh)) * tg_.tiles_x;
    if (tiles > 0x7fffffff) throw ValueError("image too large for the fft method");
    tg_.tiles = static_cast<int>(tiles);
    const std::int64_t per_tile = n_ * m_ * sizeof(Real) + n_ * mc_ * sizeof(Cplx);
    const std::int64_t bmax = std::max<std::int64_t>(1, kFftBatchBytes / per_tile);
    const std::int64_t batches = (tiles + bmax - 1) / bmax;
    batch_ = std::min<std::int64_t>((tiles + batches - 1) / batches, 65535);
  }

  void run_tiles(const Tensor2D& in, const Tensor2D& out, cudaStream_t stream,
                 const unsigned* amax) {
    const int ih = static_cast<int>(in.rows), iw = static_cast<int>(in.cols);
    const int b = static_cast<int>(batch_);
    SharedCufft::Use fft(*pair_, stream);
    for (int t0 = 0; t0 < tg_.tiles; t0 += b) {
      dim3 g = grid2d(m_, std::min<std::int64_t>(n_, 256));  // blocks loop over the rows
      g.z = b;
      tile_gather_kernel<P><<<g, 256, 0, stream>>>(in.ptr<Store>(), in.row_stride, ih, iw,
                                                   real_.get<Real>(), tg_, t0, amax, nf_.flag());
      TC_CUDA_LAUNCH_CHECK();
      TC_CUFFT_CHECK(cufftXtExec(fft.first(), real_.get(), spec_.get(), CUFFT_FORWARD));
      const dim3 gm(std::max(1, std::min(ceil_div(n_ * mc_, 256), 1024)), b);
      multiply_tiles_kernel<Cplx><<<gm, 256, 0, stream>>>(spec_.get<Cplx>(), kspec_.get<Cplx>(),
                                                          n_ * mc_);
      TC_CUDA_LAUNCH_CHECK();
      TC_CUFFT_CHECK(cufftXtExec(fft.second(), spec_.get(), real_.get(), CUFFT_INVERSE));
      dim3 gs = grid2d(tg_.sw, std::min(tg_.sh, 256));
      gs.z = b;
      tile_scatter_kernel<P><<<gs, 256, 0, stream>>>(real_.get<Real>(), tg_, t0, out.ptr<Store>(),
                                                     out.row_stride, static_cast<int>(out.rows),
                                                     static_cast<int>(out.cols), amax, kscale_,
                                                     nf_.flag());
      TC_CUDA_LAUNCH_CHECK();
    }
  }

  // Per-image kernels: buffers and batched transforms for groups of g images (remade when a
  // call's group size differs from the last one's).
  void make_group(std::int64_t g) {
    if (g == group_) return;
    gfwd_.reset();
    ginv_.reset();
    group_ = 0;
    real_.reset(g * n_ * m_ * sizeof(Real));
    spec_.reset(g * n_ * mc_ * sizeof(Cplx));
    auto f = std::make_unique<CufftPlan>(), i = std::make_unique<CufftPlan>();
    const std::size_t ws_f = f->make(n_, m_, F::rtype, F::ctype, F::ctype, true, g);
    const std::size_t ws_i = i->make(n_, m_, F::ctype, F::rtype, F::ctype, true, g);
    work_.reset(std::max(ws_f, ws_i));
    TC_CUFFT_CHECK(cufftSetWorkArea(f->get(), work_.get()));
    TC_CUFFT_CHECK(cufftSetWorkArea(i->get(), work_.get()));
    gfwd_ = std::move(f);
    ginv_ = std::move(i);
    group_ = g;
  }

  using KReal = std::conditional_t<P == Precision::fp64, double, float>;
  using KCplx = std::conditional_t<P == Precision::fp64, double2, float2>;

  // A new kernel: its operands now, its spectrum at the next call on that call's stream (as a
  // first call's). fp16's spectrum is made at construction and waited for: remade instead.
  bool set_kernel(const double* k) override {
    if (P == Precision::fp16 || kernels_ != 1) return false;
    PlanRequest q;
    q.kernel = k;
    q.kh = kh_;
    q.kw = kw_;
    kernel_host(q);
    nf_.set_kernel(k);
    kspec_ready_ = false;
    return true;
  }

  // The kernel as its transform takes it (half-rounded operands for fp16 / fp16fp32), and the
  // spectrum's scale: 1 / (N M), or for fp16 a power of two <= 1 / sum|k| so that it fits half.
  void kernel_host(const PlanRequest& r) {
    khost_.resize(static_cast<std::size_t>(r.kh * r.kw));
    kh_ = r.kh;
    kw_ = r.kw;
    double abs_sum = 0;
    for (std::size_t i = 0; i < khost_.size(); ++i) {
      double v = r.kernel[i];
      if (P == Precision::fp16 || P == Precision::fp16fp32)
        v = static_cast<double>(__half2float(__double2half(v)));  // the operands are half
      khost_[i] = static_cast<KReal>(v);
      abs_sum += std::fabs(v);
    }
    kscale64_ = 1.0 / (double(n_) * double(m_));
    if constexpr (F::scaled) {
      kscale_ = abs_sum > 0 ? static_cast<float>(std::exp2(-std::ceil(std::log2(abs_sum)))) : 1.f;
      kscale64_ = kscale_;
    }
  }

  // conj(FFT(k)) * scale into kspec_: the kernel at the origin of an N x M zero array (the
  // plan's own real_ buffer; its transform into spec_), on `stream`, nothing allocated, no
  // host synchronisation (the upload is from pageable memory the plan keeps: staged at once).
  void kernel_spectrum(cudaStream_t stream) {
    static_assert(P == Precision::fp16 || std::is_same<KReal, Real>::value, "buffers reused");
    if constexpr (P != Precision::fp16) {
      TC_CUDA_CHECK(cudaMemsetAsync(real_.get(), 0, n_ * m_ * sizeof(KReal), stream));
      TC_CUDA_CHECK(cudaMemcpy2DAsync(real_.get(), m_ * sizeof(KReal), khost_.data(),
                                      kw_ * sizeof(KReal), kw_ * sizeof(KReal), kh_,
                                      cudaMemcpyHostToDevice, stream));
      {
        SharedCufft::Use k(*kplan_, stream);
        TC_CUFFT_CHECK(cufftXtExec(k.first(), real_.get(), spec_.get(), CUFFT_FORWARD));
      }
      finish_spectrum_kernel<KCplx, Cplx><<<grid1d(n_ * mc_), 256, 0, stream>>>(
          spec_.get<KCplx>(), kspec_.get<Cplx>(), n_ * mc_, kscale64_);
      TC_CUDA_LAUNCH_CHECK();
    }
    kspec_ready_ = true;
  }

  // fp16: the kernel's spectrum in fp32 (wider than the plan's half buffers), at construction,
  // in temporaries, on the legacy stream, waited for.
  void kernel_spectrum_fp16() {
    DeviceBuffer kreal(n_ * m_ * sizeof(KReal)), kc(n_ * mc_ * sizeof(KCplx));
    TC_CUDA_CHECK(cudaMemset(kreal.get(), 0, kreal.bytes()));
    TC_CUDA_CHECK(cudaMemcpy2D(kreal.get(), m_ * sizeof(KReal), khost_.data(),
                               kw_ * sizeof(KReal), kw_ * sizeof(KReal), kh_,
                               cudaMemcpyHostToDevice));
    {
      SharedCufft::Use k(*kplan_, nullptr);
      TC_CUFFT_CHECK(cufftXtExec(k.first(), kreal.get(), kc.get(), CUFFT_FORWARD));
    }
    finish_spectrum_kernel<KCplx, Cplx><<<grid1d(n_ * mc_), 256>>>(
        kc.get<KCplx>(), kspec_.get<Cplx>(), n_ * mc_, kscale64_);
    TC_CUDA_LAUNCH_CHECK();
    TC_CUDA_CHECK(cudaStreamSynchronize(nullptr));
    kspec_ready_ = true;
  }

  // Per-image kernels: the K kernels' spectra one after another, by one batched transform (at
  // construction, waited for).
  void kernel_spectra(const PlanRequest& r) {
    const std::int64_t K = kernels_, nk = n_ * mc_;
    std::vector<KReal> host(static_cast<std::size_t>(K * r.kh * r.kw));
    for (std::size_t i = 0; i < host.size(); ++i) {
      double v = r.kernel[i];
      if (P == Precision::fp16fp32)
        v = static_cast<double>(__half2float(__double2half(v)));  // the operands are half
      host[i] = static_cast<KReal>(v);
    }
    DeviceBuffer packed, kreal(K * n_ * m_ * sizeof(KReal)), kc(K * nk * sizeof(KCplx));
    packed.upload(host.data(), host.size() * sizeof(KReal));
    TC_CUDA_CHECK(cudaMemset(kreal.get(), 0, kreal.bytes()));
    const dim3 gk(1, static_cast<unsigned>(std::min<std::int64_t>(r.kh, 1024)),
                  static_cast<unsigned>(std::min<std::int64_t>(K, 65535)));
    place_kernels_kernel<KReal><<<gk, 128>>>(packed.get<KReal>(), static_cast<int>(r.kh),
                                             static_cast<int>(r.kw), kreal.get<KReal>(),
                                             static_cast<int>(n_), static_cast<int>(m_), K);
    TC_CUDA_LAUNCH_CHECK();
    CufftPlan plan;
    const cudaDataType rt = P == Precision::fp64 ? CUDA_R_64F : CUDA_R_32F;
    const cudaDataType ct = P == Precision::fp64 ? CUDA_C_64F : CUDA_C_32F;
    plan.make(n_, m_, rt, ct, ct, false, K);
    TC_CUFFT_CHECK(cufftXtExec(plan.get(), kreal.get(), kc.get(), CUFFT_FORWARD));
    finish_spectrum_kernel<KCplx, Cplx><<<grid1d(K * nk), 256>>>(
        kc.get<KCplx>(), kspec_.get<Cplx>(), K * nk, 1.0 / (double(n_) * double(m_)));
    TC_CUDA_LAUNCH_CHECK();
    TC_CUDA_CHECK(cudaStreamSynchronize(nullptr));
    kspec_ready_ = true;
  }

  std::int64_t n_ = 0, m_ = 0, mc_ = 0;
  std::int64_t group_ = 0;  // per-image kernels: images per group of the batched transforms
  std::unique_ptr<CufftPlan> gfwd_, ginv_;
  std::int64_t batch_ = 1;  // transforms per cuFFT call (tiles per batch; 1 for the whole image)
  TileGrid tg_{};           // tiles > 0: overlap-save
  float kscale_ = 1.f;
  double kscale64_ = 1.0;
  std::vector<KReal> khost_;
  std::int64_t kh_ = 0, kw_ = 0;
  bool kspec_ready_ = false;  // (a CUDA plan runs one call at a time: the plan cache's checkout)
  std::shared_ptr<SharedCufft> pair_, kplan_;
  DeviceBuffer real_, spec_, kspec_, amax_;
  DeviceBuffer work_;   // per-image kernels: the group transforms' work area
  NonfiniteRepair nf_;  // non-finite pixels: staged as 0, their windows recomputed (header)
};

// ---- complex data (fp32 / fp64): one C2C transform pair instead of four real correlations ----
// Interleaved complex images in and out. The valid correlation with a complex kernel E is
// sum_u x[i+u] E[u] = IFFT(X * conj(FFT(conj(E))))[i]: conj(E) is transformed once per plan and
// its conjugate, scaled by 1 / (N M), kept.
template <class Real, class Cplx>
__global__ void pad_complex_kernel(const Real* __restrict__ in, std::int64_t stride, int ih, int iw,
                                   Cplx* __restrict__ buf, int n, int m) {
  for (int y = blockIdx.y; y < n; y += gridDim.y)
    for (int x = blockIdx.x * blockDim.x + threadIdx.x; x < m; x += gridDim.x * blockDim.x) {
      Cplx v{0, 0};
      if (y < ih && x < iw) {  // element-wise loads: no 16-byte alignment assumed for double2
        const std::int64_t i = 2 * (y * stride + x);
        v = Cplx{in[i], in[i + 1]};
      }
      buf[static_cast<std::int64_t>(y) * m + x] = v;
    }
}

template <class Real, class Cplx>
__global__ void crop_complex_kernel(const Cplx* __restrict__ buf, int m, Real* __restrict__ out,
                                    std::int64_t stride, int oh, int ow) {
  for (int y = blockIdx.y; y < oh; y += gridDim.y)
    for (int x = blockIdx.x * blockDim.x + threadIdx.x; x < ow; x += gridDim.x * blockDim.x) {
      const Cplx v = buf[static_cast<std::int64_t>(y) * m + x];
      const std::int64_t o = 2 * (y * stride + x);
      out[o] = v.x;
      out[o + 1] = v.y;
    }
}

template <Precision P>
class FftComplexPlan final : public CudaPlan {
  static_assert(P == Precision::fp32 || P == Precision::fp64, "complex data: fp32 or fp64");
  using F = Fft<P>;
  using Real = typename F::Real;
  using Cplx = typename F::Cplx;

 public:
  explicit FftComplexPlan(const PlanRequest& r) : CudaPlan(r) {
    n_ = next_fast_size(r.ih, false);
    m_ = next_fast_size(r.iw, false);
    if (n_ > 0x7fffffff / 2 || m_ > 0x7fffffff / 2)
      throw ValueError("image too large for the fft method");
    buf_.reset(n_ * m_ * sizeof(Cplx));
    kspec_.reset(n_ * m_ * sizeof(Cplx));
    c2c_ = SharedCufft::get(device(), spec2d(n_, m_, F::ctype, F::ctype, F::ctype));
    // conj(E), the kernel's transform's input (at the origin of an N x M zero array, on the
    // device at the first call: kernel_spectrum)
    khost_.resize(static_cast<std::size_t>(r.kh * r.kw));
    for (std::size_t i = 0; i < khost_.size(); ++i)
      khost_[i] = Cplx{static_cast<Real>(r.kernel[i]),
                       static_cast<Real>(r.kernel_imag ? -r.kernel_imag[i] : 0.0)};
    kh_ = r.kh;
    kw_ = r.kw;
  }

  std::size_t workspace_bytes() const override {
    return c2c_->work_bytes() + buf_.bytes() + kspec_.bytes();
  }

 protected:
  void run_device(const Tensor2D& in, const Tensor2D& out, cudaStream_t stream) override {
    const int n = static_cast<int>(n_), m = static_cast<int>(m_);
    SharedCufft::Use fft(*c2c_, stream);
    if (!kspec_ready_) kernel_spectrum(fft.first(), stream);
    pad_complex_kernel<Real, Cplx><<<grid2d(m, n), 256, 0, stream>>>(
        in.ptr<Real>(), in.row_stride, static_cast<int>(in.rows), static_cast<int>(in.cols),
        buf_.get<Cplx>(), n, m);
    TC_CUDA_LAUNCH_CHECK();
    TC_CUFFT_CHECK(cufftXtExec(fft.first(), buf_.get(), buf_.get(), CUFFT_FORWARD));
    multiply_kernel<Cplx><<<grid1d(n_ * m_), 256, 0, stream>>>(buf_.get<Cplx>(),
                                                               kspec_.get<Cplx>(), n_ * m_);
    TC_CUDA_LAUNCH_CHECK();
    TC_CUFFT_CHECK(cufftXtExec(fft.first(), buf_.get(), buf_.get(), CUFFT_INVERSE));
    crop_complex_kernel<Real, Cplx><<<grid2d(out.cols, out.rows), 256, 0, stream>>>(
        buf_.get<Cplx>(), m, out.ptr<Real>(), out.row_stride, static_cast<int>(out.rows),
        static_cast<int>(out.cols));
    TC_CUDA_LAUNCH_CHECK();
  }

 private:
  // conj(FFT(conj(E))) / (N M) into kspec_, on `stream`, in the plan's own buffer (the run's
  // staging overwrites it next): nothing allocated, no host synchronisation.
  void kernel_spectrum(cufftHandle c2c, cudaStream_t stream) {
    TC_CUDA_CHECK(cudaMemsetAsync(buf_.get(), 0, buf_.bytes(), stream));
    TC_CUDA_CHECK(cudaMemcpy2DAsync(buf_.get(), m_ * sizeof(Cplx), khost_.data(),
                                    kw_ * sizeof(Cplx), kw_ * sizeof(Cplx), kh_,
                                    cudaMemcpyHostToDevice, stream));
    TC_CUFFT_CHECK(cufftXtExec(c2c, buf_.get(), buf_.get(), CUFFT_FORWARD));
    finish_spectrum_kernel<Cplx, Cplx><<<grid1d(n_ * m_), 256, 0, stream>>>(
        buf_.get<Cplx>(), kspec_.get<Cplx>(), n_ * m_, 1.0 / (double(n_) * double(m_)));
    TC_CUDA_LAUNCH_CHECK();
    kspec_ready_ = true;
  }

  std::int64_t n_ = 0, m_ = 0, kh_ = 0, kw_ = 0;
  std::vector<Cplx> khost_;
  bool kspec_ready_ = false;
  std::shared_ptr<SharedCufft> c2c_;
  DeviceBuffer buf_, kspec_;
};

}  // namespace
}  // namespace cuda

std::unique_ptr<Plan> make_fft_plan(const PlanRequest& r) {
  cuda::check_int_extent(r);
  if (r.kernel_count == 1 && cuda::fft_rows_applies(r)) return cuda::make_fft_rows_plan(r);
  if (r.complex_data) {
    if (r.precision == Precision::fp32)
      return std::make_unique<cuda::FftComplexPlan<Precision::fp32>>(r);
    return std::make_unique<cuda::FftComplexPlan<Precision::fp64>>(r);  // make_plan checked
  }
  switch (r.precision) {
    case Precision::fp16: return std::make_unique<cuda::FftPlan<Precision::fp16>>(r);
    case Precision::fp16fp32: return std::make_unique<cuda::FftPlan<Precision::fp16fp32>>(r);
    case Precision::fp32: return std::make_unique<cuda::FftPlan<Precision::fp32>>(r);
    case Precision::fp64: return std::make_unique<cuda::FftPlan<Precision::fp64>>(r);
    default: break;
  }
  throw ValueError(std::string("fft does not support precision ") + precision_name(r.precision));
}

}  // namespace tc
