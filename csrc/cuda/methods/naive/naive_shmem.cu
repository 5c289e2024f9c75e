// "naive + shmem" (im2tensor paper 5.1.2, after the CUDA samples): a block stages an image tile
// plus its apron in shared memory (converted to the compute type once), and every thread
// accumulates R outputs down a column with a sliding register window (sliding.cuh); fp32 with an
// odd square kernel of 3..17 taps takes naive_fixed.cu's variant (shape compiled in). Taps are
// processed in chunks of CU x CV, so there is no limit on the kernel size. The coefficients are
// staged per chunk in shared memory; optionally (see coefficients_in_constant_memory) they travel
// as a __grid_constant__ launch parameter, i.e. in constant memory private to each launch (plans
// on different streams never race), when they fit in 30 KB. Per-image kernels
// (PlanRequest::kernel_count > 1, shared-memory coefficients): image b of a stack reads kernel
// b % kernel_count, so a depthwise (N, C, H, W) stack is one launch. Device images in 'same' /
// 'full' are staged straight from the unpadded images through the padded rows' and columns'
// source indices (MAP: run_device_mapped), so no padded copy is written.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "core/factories.hpp"
#include "cuda/runtime/common.cuh"
#include "cuda/methods/naive/naive_fixed.cuh"
#include "cuda/runtime/precision.cuh"
#include "cuda/runtime/sliding.cuh"

namespace tc {
namespace cuda {
namespace {

constexpr int BX = 32, BY = 8;   // threads; a warp spans BX columns (of W pixels' lanes)
constexpr int CU = 32, CV = 32;  // taps per chunk (rows, columns)
constexpr int kSmallCapBytes = 4096, kLargeCapBytes = 30000;

template <Precision P>
constexpr int rows_per_thread() { return P == Precision::fp64 ? 4 : 8; }

template <class Vec, int N>
struct Coefs {
  Vec k[N];
};

// ih x iw: the (padded) image the tiles come from. MAP: padded column x is source column
// x - m.left of `in` inside its m.cols columns, else col_src[x] (-1: `fill`), and rows likewise
// through row_src (an index load per staged row; columns inside need none); else `in` is the
// padded image.
struct PadMap {
  const std::int64_t* row_src;
  const std::int64_t* col_src;
  int left, cols;  // the source's first column in the padded image, its width
};

template <Precision P, int KCAP, bool MAP>
__global__ void __launch_bounds__(BX* BY)
    shmem_kernel(const typename Prec<P>::Store* __restrict__ in, std::int64_t in_stride, int ih,
                 int iw, typename Prec<P>::Store* __restrict__ out, std::int64_t out_stride,
                 int oh, int ow, int kh, int kw, int pitch,
                 std::int64_t in_bstride, std::int64_t out_bstride,  // image blockIdx.z of a stack
                 const typename Prec<P>::Vec* __restrict__ kglob, int kernels, std::int64_t first,
                 const PadMap m, typename Prec<P>::Store fill,
                 const __grid_constant__ Coefs<typename Prec<P>::Vec, (KCAP > 0 ? KCAP : 1)> kc) {
  using T = Prec<P>;
  using Vec = typename T::Vec;
  constexpr int R = rows_per_thread<P>(), OH = BY * R, W = T::W;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Vec* tile = reinterpret_cast<Vec*>(smem_raw);
  Vec* ks = tile + (OH + imin(kh, CU) - 1) * pitch;  // kernel chunk when KCAP == 0

  const int tx = threadIdx.x, ty = threadIdx.y;
  const int ox0 = blockIdx.x * BX * W;
  in += blockIdx.z * in_bstride;
  out += blockIdx.z * out_bstride;
  if constexpr (KCAP == 0)  // image first + z of the stack takes kernel (first + z) % kernels
    kglob += (first + blockIdx.z) % kernels * (static_cast<std::int64_t>(kh) * kw);
  for (int oy0 = blockIdx.y * OH; oy0 < oh; oy0 += gridDim.y * OH) {
    Vec acc[R];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = T::zero();
    for (int u0 = 0; u0 < kh; u0 += CU) {
      const int cu = imin(CU, kh - u0);
      for (int v0 = 0; v0 < kw; v0 += CV) {
        const int cv = imin(CV, kw - v0);
        const int rows = OH + cu - 1, cols = BX + cv - 1;
        __syncthreads();  // the previous chunk is consumed
        // Division-free 2-D staging: lanes along a row (coalesced), warps down the rows.
        for (int a = ty; a < rows; a += BY) {
          const int gy = oy0 + u0 + a;
          std::int64_t sr = gy;  // the source row (MAP: -1, the fill value's)
          if constexpr (MAP) sr = gy < ih ? m.row_src[gy] : -1;
          const typename T::Store* row = in + (sr < 0 ? 0 : sr) * in_stride;
          auto at = [&](int x) -> typename T::Elem {  // padded column x of padded row gy
            if constexpr (MAP) {
              const int ix = x - m.left;
              const std::int64_t sc = ix >= 0 && ix < m.cols ? ix : m.col_src[x];
              return sr >= 0 && sc >= 0 ? T::load(row[sc]) : T::load(fill);
            } else {
              return T::load(row[x]);
            }
          };
#pragma unroll 2
          for (int b = tx; b < cols; b += BX) {
            const int gx = ox0 + v0 + b;
            typename T::Elem e0 = T::zero_elem(), e1 = T::zero_elem();
            if (gy < ih) {
              if (gx < iw) e0 = at(gx);
              if (W == 2 && gx + BX < iw) e1 = at(gx + BX);  // lane 1: BX pixels on
            }
            tile[a * pitch + b] = T::pack(e0, e1);
          }
        }
        if constexpr (KCAP == 0) {
          for (int a = ty; a < cu; a += BY)
            for (int b = tx; b < cv; b += BX) ks[a * CV + b] = kglob[(u0 + a) * kw + v0 + b];
        }
        __syncthreads();
        const Vec* base = tile + ty * R * pitch + tx;
        for (int v = 0; v < cv; ++v) {
          if constexpr (KCAP > 0) {
            const int kb = u0 * kw + v0 + v;
            slide_column<T, R>(acc, base + v, pitch, cu, [&](int u) { return kc.k[kb + u * kw]; });
          } else {
            slide_column<T, R>(acc, base + v, pitch, cu, [&](int u) { return ks[u * CV + v]; });
          }
        }
      }
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int y = oy0 + ty * R + r, x = ox0 + tx;
      if (y < oh) {
        typename T::Store* o = out + y * out_stride;
        if (x < ow) o[x] = T::store(T::lane(acc[r], 0));
        if (W == 2 && x + BX < ow) o[x + BX] = T::store(T::lane(acc[r], 1));
      }
    }
  }
}

template <Precision P, int KCAP>
class ShmemPlan final : public BatchedCudaPlan {
  using T = Prec<P>;
  using Vec = typename T::Vec;
  using K = Coefs<Vec, (KCAP > 0 ? KCAP : 1)>;

 public:
  explicit ShmemPlan(const PlanRequest& r) : BatchedCudaPlan(r), kc_(std::make_unique<K>()) {
    const std::int64_t n = r.kh * r.kw;
    upload_coefficients<P>(r.kernel, n * r.kernel_count, coef_);  // make_shmem: KCAP > 0 has one
    if constexpr (KCAP > 0)
      TC_CUDA_CHECK(cudaMemcpy(kc_->k, coef_.get(), n * sizeof(Vec), cudaMemcpyDeviceToHost));
    constexpr int OH = BY * rows_per_thread<P>();
    pitch_ = BX + static_cast<int>(std::min<std::int64_t>(CV, r.kw)) - 1;
    smem_ = (OH + std::min<std::int64_t>(CU, r.kh) - 1) * pitch_ * sizeof(Vec) +
            (KCAP == 0 ? CU * CV * sizeof(Vec) : 0);
  }
  // The kernel's coefficients live in the launch parameters or a small device buffer.
  std::size_t workspace_bytes() const override { return KCAP == 0 ? coef_.bytes() : 0; }
  // A new kernel: its coefficients are made on the device at the next call, on its stream
  // (the launch-parameter copy of the constant-memory option is made at construction: remade).
  bool set_kernel(const double* k) override {
    if (KCAP > 0) return false;
    pending_.set(k, kh_ * kw_);
    kstage_.ensure(pending_.size() * sizeof(double));
    return true;
  }

 protected:
  void run_device_batch(const Tensor2D& in, std::int64_t in_bstride, const Tensor2D& out,
                        std::int64_t out_bstride, std::int64_t batch,
                        cudaStream_t stream) override {
    launch<false>(in.ptr<typename T::Store>(), in.row_stride, in_bstride, PadMap{},
                  typename T::Store{}, out, out_bstride, batch, stream);
  }
  bool run_device_mapped(const HostGather& g, const std::int64_t* row_src,
                         const std::int64_t* col_src, std::uint64_t fill, const Tensor2D& out,
                         std::int64_t out_bstride, std::int64_t batch,
                         cudaStream_t stream) override {
    typename T::Store f;
    std::memcpy(&f, &fill, sizeof(f));  // (fill_bits: the storage's bits in the low bytes)
    const PadMap m{row_src, col_src, static_cast<int>(g.pad_left), static_cast<int>(g.src.cols)};
    launch<true>(g.src.ptr<typename T::Store>(), g.src.row_stride, g.src_batch_stride, m, f, out,
                 out_bstride, batch, stream);
    return true;
  }

 private:
  // One launch per 65535 images (gridDim.z): small images fill the card together. The tiles
  // come from the plan's (padded) image shape, ih_ x iw_.
  template <bool MAP>
  void launch(const typename T::Store* in, std::int64_t in_stride, std::int64_t in_bstride,
              const PadMap m, typename T::Store fill, const Tensor2D& out,
              std::int64_t out_bstride, std::int64_t batch, cudaStream_t stream) {
    constexpr int OH = BY * rows_per_thread<P>();
    const int oh = static_cast<int>(out.rows), ow = static_cast<int>(out.cols);
    const dim3 block(BX, BY);
    if (pending_.upload(kstage_.get(), stream)) {
      const std::int64_t n = static_cast<std::int64_t>(pending_.size());
      coefficients_kernel<P><<<ceil_div(n, 256), 256, 0, stream>>>(kstage_.get<double>(),
                                                                   coef_.get<Vec>(), n);
      TC_CUDA_LAUNCH_CHECK();
    }
    for (std::int64_t b0 = 0; b0 < batch; b0 += 65535) {
      const dim3 grid(ceil_div(ow, BX * T::W), std::min(ceil_div(oh, OH), 65535),
                      static_cast<unsigned>(std::min<std::int64_t>(batch - b0, 65535)));
      shmem_kernel<P, KCAP, MAP><<<grid, block, smem_, stream>>>(
          in + b0 * in_bstride, in_stride, static_cast<int>(ih_), static_cast<int>(iw_),
          out.ptr<typename T::Store>() + b0 * out_bstride, out.row_stride, oh, ow,
          static_cast<int>(kh_), static_cast<int>(kw_), pitch_, in_bstride, out_bstride,
          coef_.get<Vec>(), static_cast<int>(kernels_), b0, m, fill, *kc_);
      TC_CUDA_LAUNCH_CHECK();
    }
  }

  DeviceBuffer coef_;
  DeviceBuffer kstage_;          // set_kernel's float64 kernel on the device
  PendingKernel pending_;  // set_kernel's kernel until the next call uploads it
  std::unique_ptr<K> kc_;  // host copy handed to every launch (up to 30 KB)
  int pitch_ = 0;
  std::size_t smem_ = 0;
};

// Where the coefficients live: shared memory (default: staged per chunk, read as shared-memory
// broadcasts) or constant memory (launch parameters, up to 30 KB). On the H100 the constant path
// stalled on constant-cache misses (Nsight Compute, 2026-11-22); both are kept so the benchmark
// can time them side by side (plan option naive_shmem.coefficients = 'constant').
template <Precision P>
std::unique_ptr<Plan> make_shmem(const PlanRequest& r) {
  using Vec = typename Prec<P>::Vec;
  constexpr int small = kSmallCapBytes / sizeof(Vec), large = kLargeCapBytes / sizeof(Vec);
  const std::int64_t n = r.kh * r.kw;
  if (!r.options.naive_shmem_constant || r.kernel_count > 1)  // per-image kernels: shared memory
    return std::make_unique<ShmemPlan<P, 0>>(r);
  if (n <= small) return std::make_unique<ShmemPlan<P, small>>(r);
  if (n <= large) return std::make_unique<ShmemPlan<P, large>>(r);
  return std::make_unique<ShmemPlan<P, 0>>(r);
}

}  // namespace
}  // namespace cuda

std::unique_ptr<Plan> make_naive_shmem_plan(const PlanRequest& r) {
  cuda::check_int_extent(r);
  if (cuda::naive_fixed_applies(r)) return cuda::make_naive_fixed_plan(r);
  return cuda::with_precision(r.precision, [&](auto tag) -> std::unique_ptr<Plan> {
    return cuda::make_shmem<decltype(tag)::value>(r);
  });
}

}  // namespace tc
