// "bilateral_cuda": the bilateral filter on the CUDA cores. A block of 32 x 8 threads computes
// 32 x 16 outputs (two rows per thread, sharing each tap's spatial weight load); the tile with
// its apron and log2 of the spatial weights sit in shared memory. Per tap and output: one
// FADD (d), FMUL + FFMA (the exp2 argument d (d cr) + log2 w_s), one MUFU.EX2, FFMA + FADD
// (sums of w d and w): the MUFU's 16 results per clock per SM bound the kernel.
#include "core/factories.hpp"
#include "cuda/methods/bilateral/bilateral.cuh"

namespace tc {
namespace cuda {
namespace {

constexpr int BX = 32, BY = 8, RY = 2, OH = BY * RY;

// SMEM: tile and weights in shared memory; else (huge radii) both read from global memory.
template <class T, bool SMEM>
__global__ void __launch_bounds__(BX* BY)
    bilateral_cc(const T* __restrict__ in, std::int64_t is, int ih, int iw, T* __restrict__ out,
                 std::int64_t os, int oh, int ow, int k, const T* __restrict__ ls_g, T cr) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int x0 = blockIdx.x * BX, y0 = blockIdx.y * OH;
  const int tw = BX + k - 1, th = OH + k - 1;
  const T* src;
  std::int64_t pitch;
  const T* ls;
  if constexpr (SMEM) {
    T* lss = reinterpret_cast<T*>(smem_raw);
    T* tile = lss + k * k;
    for (int i = ty * BX + tx; i < k * k; i += BX * BY) lss[i] = ls_g[i];
    bl_stage(tile, in, is, ih, iw, y0, x0, th, tw);
    __syncthreads();
    src = tile + ty * tw + tx;
    pitch = tw;
    ls = lss;
  } else {
    // Outputs past the edge clamp their reads inside the image (their results are not stored).
    src = in + static_cast<std::int64_t>(min(y0 + ty, ih - k)) * is + min(x0 + tx, iw - k);
    pitch = is;
    ls = ls_g;
  }
  const T* s0 = src;
  const T* s1 = src + (SMEM ? BY * pitch : static_cast<std::int64_t>(min(y0 + ty + BY, ih - k) -
                                                                     min(y0 + ty, ih - k)) * is);
  const int rad = k / 2;
  const T p0 = s0[rad * pitch + rad], p1 = s1[rad * pitch + rad];
  T n0 = 0, d0 = 0, n1 = 0, d1 = 0;
  for (int u = 0; u < k; ++u) {
    const T* r0 = s0 + u * pitch;
    const T* r1 = s1 + u * pitch;
    const T* l = ls + u * k;
#pragma unroll 4
    for (int v = 0; v < k; ++v) {
      const T lw = l[v];
      const T a = r0[v] - p0, b = r1[v] - p1;
      const T wa = bl_exp2(fma(a, a * cr, lw)), wb = bl_exp2(fma(b, b * cr, lw));
      n0 = fma(wa, a, n0);
      d0 += wa;
      n1 = fma(wb, b, n1);
      d1 += wb;
    }
  }
  const int x = x0 + tx, y = y0 + ty;
  if (x < ow) {
    if (y < oh) out[static_cast<std::int64_t>(y) * os + x] = p0 + n0 / d0;
    if (y + BY < oh) out[static_cast<std::int64_t>(y + BY) * os + x] = p1 + n1 / d1;
  }
}

template <class T>
class BilateralCudaPlan final : public BilateralPlanBase {
 public:
  explicit BilateralCudaPlan(const PlanRequest& r) : BilateralPlanBase(r) {
    const BilateralSetup s = bilateral_setup(r);
    std::vector<T> ls(s.log2_ws.begin(), s.log2_ws.end());
    weights_.upload(ls.data(), ls.size() * sizeof(T));
    cr_ = static_cast<T>(std::max(s.cr, -static_cast<double>(std::numeric_limits<T>::max())));
    const int k = static_cast<int>(kh_);
    set_smem(bilateral_cc<T, true>,
             (static_cast<std::size_t>(k) * k +
              static_cast<std::size_t>(OH + k - 1) * (BX + k - 1)) * sizeof(T));
  }

 protected:
  void run_device(const Tensor2D& in, const Tensor2D& out, cudaStream_t stream) override {
    const int oh = static_cast<int>(out.rows), ow = static_cast<int>(out.cols);
    launch(bilateral_cc<T, true>, bilateral_cc<T, false>,
           dim3(ceil_div(ow, BX), ceil_div(oh, OH)), dim3(BX, BY), stream, in.ptr<T>(),
           in.row_stride, static_cast<int>(in.rows), static_cast<int>(in.cols), out.ptr<T>(),
           out.row_stride, oh, ow, static_cast<int>(kh_), weights_.get<T>(), cr_);
  }

 private:
  T cr_ = 0;
};

}  // namespace
}  // namespace cuda

std::unique_ptr<Plan> make_bilateral_cuda_plan(const PlanRequest& r) {
  cuda::check_int_extent(r);
  if (r.precision == Precision::fp64) return std::make_unique<cuda::BilateralCudaPlan<double>>(r);
  return std::make_unique<cuda::BilateralCudaPlan<float>>(r);
}

}  // namespace tc
