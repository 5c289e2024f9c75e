// Tensor-core FIR filtering (Kondo, Maeda, Fukushima 2022): the three loop-unrolling patterns of
// the paper's §IV, as valid correlations out[r][j] = sum_{y,x} K[y][x] I[r+y][j+x]:
//   fir_kl   kernel-loop unrolling (Fig. 1): D = Wᵀ × (pixel patch), the output is the trace;
//   fir_ki   kernel-image-loop unrolling (Fig. 2): one weight vector against a Hankel matrix of
//            one-pixel-slid windows, only the first row (16×16×16) or column (32×8×16) of D used;
//   fir_dki  diagonal kernel-image-loop unrolling (Fig. 3, Table II): D = Wᵀ × patch again, but
//            every diagonal of D is an output (diagonal n - m -> pixel j0 + n - m), patches at a
//            kernel-width stride so each (pixel, kernel column) product is made exactly once.
// This header holds what the three share: geometry, staging, fragment loads and stores, the epilogue and
// the Plan class. Per-method kernels live in fir_kl.cu / fir_ki.cu / fir_dki.cu.
//
// The paper's layouts are WMMA shapes; here they run on mma.sync m16n8k16 (a 16×16×16 tile is two
// n8 halves, a 32×8×16 tile two stacked m16 halves), because the paper's operands (a patch at any
// column, a Hankel matrix) are not 32-byte aligned tiles that wmma::load_matrix_sync accepts,
// while mma.sync fragments can be filled lane by lane. Precision traits, the MMA wrappers,
// ldmatrix and the image staging are im2tensor's (csrc/cuda/methods/im2tensor/).
//
// Kernel size: one launch handles a kernel block of at most 64×64 (4 tiles of 16 each way, staged
// rows in shared memory); larger kernels are split into such blocks whose results are summed in a
// float workspace (first block writes, later ones add, the last narrows to the output type), one
// band of output rows at a time so the workspace stays under i2t::kWsCapBytes.
//
// Non-finite input: the kernel is zero padded to multiples of 16 and 0·inf = NaN, so a NaN or inf
// pixel makes NaN of every output whose padded 16-multiple window covers it (up to 15 columns/rows
// beyond its true footprint); the epilogue flags such stores and NonfiniteRepair (nonfinite.cuh)
// recomputes them over their own windows, so NaN/±inf land where scipy puts them.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "cuda/methods/im2tensor/im2tensor.cuh"
#include "cuda/runtime/precision.cuh"

namespace tc {
namespace cuda {
namespace fir {

using i2t::align_up;
using i2t::ldmatrix_x4_trans;
using i2t::MmaOp;
using i2t::narrow;
using i2t::stage_image;
using i2t::TrBf16;
using i2t::TrFp16;
using i2t::TrFp16Fp32;

enum class Scheme : int { kl, ki16, ki32, dki };

constexpr int kWarps = 8;
constexpr int kBlock = 64;  // kernel block per launch: NX, KC <= 4 tiles of 16

// Epilogue of one launch (kernel blocks summed in a float workspace when there are several).
enum Epi : int { epi_store = 0, epi_first = 1, epi_mid = 2, epi_last = 3 };

struct Geo {
  int ih, iw;       // image view of this kernel block
  int kh, kw;       // kernel block
  int hR, wR;       // output (the whole kernel's)
  int hKp, hWp;     // kh, kw padded to 16
  int NX, KC;       // 16-column tiles of x, 16-row chunks of y
  int Wc, dB;       // output columns / rows per CTA
  int nJ, nRB;      // grid
  int colsS, rowsS, ldS;
};

struct Args {
  const void* in; long long in_ld;
  void* out; long long out_ld;
  const void* kt;   // K̂ᵀ of the block: [hWp][hKp] Stage, zero padded
  float* ws;        // [hR][wR] float sums over kernel blocks (nullptr with one block)
  Geo g;
  int epi;
  bool vec_ok;
  int* nf;          // NonfiniteRepair's flag: a final store was not finite
};

// Staged rows: Wc output columns + the kernel's 16NX + one more patch (DKI), rounded so rows are
// an odd multiple of 16 bytes apart (ldmatrix's 8 row addresses on distinct banks).
inline Geo make_geo(int ih, int iw, int kh, int kw, int hR, int wR, int Wc, int dB) {
  Geo g{};
  g.ih = ih; g.iw = iw; g.kh = kh; g.kw = kw; g.hR = hR; g.wR = wR;
  g.hKp = ceil_div(kh, 16) * 16;
  g.hWp = ceil_div(kw, 16) * 16;
  g.NX = g.hWp / 16;
  g.KC = g.hKp / 16;
  g.Wc = Wc;
  g.dB = dB;
  g.nJ = ceil_div(wR, Wc);
  g.nRB = ceil_div(hR, dB);
  g.colsS = Wc + g.hWp + 32;  // + the last DKI patch, + the 32x8 Hankel reads past the last window
  g.ldS = (g.colsS + 63) / 64 * 64 + 8;
  g.rowsS = dB + g.hKp - 1;
  return g;
}

// Two Stage values as the packed pair an mma.sync fragment register holds (lo in the low half).
template <class S>
__device__ __forceinline__ std::uint32_t pack2(S lo, S hi) {
  std::uint16_t a, b;
  memcpy(&a, &lo, 2);
  memcpy(&b, &hi, 2);
  return static_cast<std::uint32_t>(a) | (static_cast<std::uint32_t>(b) << 16);
}
// Elements p[0], p[1] of a staged row at any (possibly odd) offset.
template <class S>
__device__ __forceinline__ std::uint32_t load_pair_any(const S* p) {
  return pack2(p[0], p[1]);
}

// One m16n8k16 product added into float accumulators. fp16 (the paper's "fp16"): the tensor core
// accumulates the 16 products of each element in half, the tile sums are added in float.
template <class T>
__device__ __forceinline__ void mma_acc(float* acc, const std::uint32_t* a, const std::uint32_t* b) {
  if constexpr (MmaOp<T>::CREGS == 4) {
    MmaOp<T>::runf(acc, a, b);
  } else {
    std::uint32_t h[2] = {0u, 0u};
    MmaOp<T>::run(h, a, b);
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[e] += MmaOp<T>::get(h, e);
  }
}

// A = Wᵀ fragment (16 kernel columns x of tile xt along m, 16 kernel rows y of chunk kc along k):
// A[m][k] = K̂ᵀ[16xt + m][16kc + k]; a lane holds rows m = g, g+8, columns 2t, 2t+8 (pairs).
template <class S>
__device__ __forceinline__ void load_wt_frag(std::uint32_t* a, const S* kt, int hKp, int xt,
                                             int kc, int lane) {
  const int g = lane >> 2, t = lane & 3;
  const S* lo = kt + (16 * xt + g) * hKp + 16 * kc + 2 * t;
  const S* hi = lo + 8 * hKp;
  a[0] = *reinterpret_cast<const std::uint32_t*>(lo);
  a[1] = *reinterpret_cast<const std::uint32_t*>(hi);
  a[2] = *reinterpret_cast<const std::uint32_t*>(lo + 8);
  a[3] = *reinterpret_cast<const std::uint32_t*>(hi + 8);
}

// Writes one output value of row r, column j (inside the output) according to the epilogue.
template <class T>
__device__ __forceinline__ void emit(const Args& a, int r, int j, float v) {
  using Out = typename T::Out;
  Out* o = static_cast<Out*>(a.out) + static_cast<std::size_t>(r) * a.out_ld + j;
  float* w = a.ws ? a.ws + static_cast<std::size_t>(r) * a.g.wR + j : nullptr;
  switch (a.epi) {
    case epi_store: *o = narrow<Out>(v); mark_nonfinite(a.nf, v); break;
    case epi_first: *w = v; break;
    case epi_mid: *w += v; break;
    default: v += *w; *o = narrow<Out>(v); mark_nonfinite(a.nf, v); break;
  }
}

// Image rows r0 .. r0+rowsS-1, columns c0 .. c0+colsS-1 of the block's view, zero outside.
template <class T>
__device__ __forceinline__ typename T::Stage* stage(const Args& a, unsigned char* smem, int r0,
                                                    int c0) {
  using S = typename T::Stage;
  S* sS = reinterpret_cast<S*>(smem);
  stage_image<T>(static_cast<const typename T::In*>(a.in), a.in_ld, a.g.ih, a.g.iw, r0,
                 a.g.rowsS, c0, a.g.colsS, sS, a.g.ldS, a.vec_ok);
  __syncthreads();
  return sS;
}

__host__ __device__ inline std::size_t stage_bytes(const Geo& g) {
  return align_up(2 * static_cast<std::size_t>(g.rowsS) * g.ldS, 128);
}

// The CTA's output tile and the lane's mma.sync coordinates (group g, thread-in-group t).
struct Cta {
  int c0, r0, warp, lane, gq, tq;
  __device__ explicit Cta(const Geo& g)
      : c0(blockIdx.x * g.Wc), r0(blockIdx.y * g.dB), warp(threadIdx.x >> 5),
        lane(threadIdx.x & 31), gq((threadIdx.x & 31) >> 2), tq(threadIdx.x & 3) {}
};

using KernelFn = void (*)(Args);
// X(T) for the three precisions' traits (explicit instantiations in each method's .cu).
#define TC_FIR_FOR_PRECISIONS(X) X(TrFp16) X(TrFp16Fp32) X(TrBf16)

// Per-scheme launch choices, defined in each method's .cu.
template <class T> KernelFn kl_kernel(const Geo& g);
template <class T> KernelFn ki_kernel(const Geo& g, bool wide);
template <class T> KernelFn dki_kernel(const Geo& g);

// ------------------------------------------------------------------------------------------
// Host side: one Plan for the three schemes.
// ------------------------------------------------------------------------------------------
template <class T>
class Plan final : public CudaPlan {
 public:
  Plan(const PlanRequest& r, Scheme s) : CudaPlan(r), scheme_(s), nf_(r) {
    check_int_extent(r);
    const int kh = static_cast<int>(r.kh), kw = static_cast<int>(r.kw);
    const int hR = static_cast<int>(r.ih - r.kh + 1), wR = static_cast<int>(r.iw - r.kw + 1);
    // Output tile per CTA: 32 rows x 128 columns (a multiple of both KI layouts' 16 / 32 pixels).
    int Wc = 128, dB = 32;
    if (s == Scheme::dki) {
      // DKI (H100, 4096², benchmarks/harness/fir_dki_harness.cu, docs/design/kondo.md): 512 columns (the patch a CTA shares
      // with the next costs 1/32 more, the staged halo 1/8) where that still gives two CTAs per
      // SM, else 256; a 64x64 block (16 tiles, no B reuse: register-bound) 256 x 64.
      const int tiles = std::min(4, ceil_div(kw, 16)) * std::min(4, ceil_div(kh, 16));
      if (tiles >= 16) {
        Wc = 256;
        dB = 64;
      } else {
        Wc = static_cast<std::int64_t>(ceil_div(wR, 512)) * ceil_div(hR, 32) >= 2 * sm_count()
                 ? 512 : 256;
      }
    }
    // Plan options fir.wc / fir.db (validated in plan_options.cpp): tuning sweeps, and the
    // tests' way to reach every geometry.
    if (r.options.fir_wc) Wc = r.options.fir_wc;
    if (r.options.fir_db) dB = r.options.fir_db;
    for (int u0 = 0; u0 < kh; u0 += kBlock) {
      for (int v0 = 0; v0 < kw; v0 += kBlock) {
        Block b;
        const int bh = std::min(kBlock, kh - u0), bw = std::min(kBlock, kw - v0);
        b.u0 = u0;
        b.v0 = v0;
        b.g = make_geo(static_cast<int>(r.ih) - u0, static_cast<int>(r.iw) - v0, bh, bw, hR, wR,
                       Wc, dB);
        if (b.g.nRB > 65535)
          throw ValueError("fir: image too tall for one launch (" + std::to_string(b.g.nRB) +
                           " row blocks, at most 65535)");
        std::vector<double> kb(static_cast<std::size_t>(bh) * bw);
        for (int y = 0; y < bh; ++y)
          for (int x = 0; x < bw; ++x)
            kb[static_cast<std::size_t>(y) * bw + x] = r.kernel[(u0 + y) * r.kw + v0 + x];
        DeviceBuffer k64;
        k64.upload(kb.data(), sizeof(double) * kb.size());
        const std::size_t n = static_cast<std::size_t>(b.g.hWp) * b.g.hKp;
        b.kt.reset(sizeof(typename T::Stage) * n);
        using St = typename T::Stage;
        i2t::prep_kt_kernel<T><<<ceil_div(n, 256), 256>>>(k64.get<double>(), bh, bw, b.g.hWp,
                                                          b.g.hKp, b.kt.template get<typename T::Stage>(),
                                                          nullptr);
        TC_CUDA_LAUNCH_CHECK();
        TC_CUDA_CHECK(cudaDeviceSynchronize());
        switch (scheme_) {
          case Scheme::kl: b.fn = kl_kernel<T>(b.g); b.smem = stage_bytes(b.g); break;
          case Scheme::ki16: b.fn = ki_kernel<T>(b.g, false); b.smem = stage_bytes(b.g); break;
          case Scheme::ki32: b.fn = ki_kernel<T>(b.g, true); b.smem = stage_bytes(b.g); break;
          case Scheme::dki: b.fn = dki_kernel<T>(b.g); b.smem = stage_bytes(b.g); break;
        }
        raise_dynamic_smem(b.fn, b.smem);
        blocks_.push_back(std::move(b));
      }
    }
    band_ = hR;
    if (blocks_.size() > 1) {
      // The float sums over kernel blocks hold one band of output rows (a whole number of CTA
      // rows) within i2t::kWsCapBytes, so they do not grow with the image height.
      const std::size_t per_row = sizeof(float) * static_cast<std::size_t>(wR);
      if (per_row * hR > i2t::kWsCapBytes)
        band_ = std::min<std::int64_t>(
            hR, std::max<std::int64_t>(1, i2t::kWsCapBytes / per_row / dB) * dB);
      ws_bytes_ = per_row * static_cast<std::size_t>(band_);
      ws_.reset(ws_bytes_);
    }
  }

  std::size_t workspace_bytes() const override { return ws_bytes_; }

 protected:
  void run_device(const Tensor2D& in, const Tensor2D& out, cudaStream_t st) override {
    using In = typename T::In;
    const std::size_t nb = blocks_.size();
    nf_.arm(st);
    const std::int64_t hR = out.rows;
    for (std::int64_t y0 = 0; y0 < hR; y0 += band_) {
      const int rows = static_cast<int>(std::min<std::int64_t>(band_, hR - y0));
      for (std::size_t i = 0; i < nb; ++i) {
        const Block& b = blocks_[i];
        const In* base =
            in.ptr<In>() + static_cast<std::size_t>(y0 + b.u0) * in.row_stride + b.v0;
        Geo g = b.g;  // the band as an image of its own
        g.hR = rows;
        g.ih = b.g.ih - static_cast<int>(y0);
        g.nRB = ceil_div(rows, g.dB);
        Args a{base, in.row_stride,
               static_cast<typename T::Out*>(out.data) + y0 * out.row_stride, out.row_stride,
               b.kt.get(), ws_.get<float>(), g,
               nb == 1 ? epi_store : i == 0 ? epi_first : i + 1 == nb ? epi_last : epi_mid,
               reinterpret_cast<std::uintptr_t>(base) % 16 == 0 &&
                   (in.row_stride * sizeof(In)) % 16 == 0,
               nf_.flag()};
        b.fn<<<dim3(g.nJ, g.nRB), kWarps * 32, b.smem, st>>>(a);
        TC_CUDA_LAUNCH_CHECK();
      }
    }
    nf_.run(in, out, st, true);
  }

 private:
  struct Block {
    int u0 = 0, v0 = 0;
    Geo g{};
    DeviceBuffer kt;
    KernelFn fn = nullptr;
    std::size_t smem = 0;
  };
  Scheme scheme_;
  std::vector<Block> blocks_;
  DeviceBuffer ws_;
  std::size_t ws_bytes_ = 0;
  std::int64_t band_ = 0;  // output rows per band of the block sums
  NonfiniteRepair nf_;
};

inline std::unique_ptr<tc::Plan> make_plan_for(const PlanRequest& r, Scheme s) {
  switch (r.precision) {
    case Precision::fp16: return std::make_unique<Plan<TrFp16>>(r, s);
    case Precision::fp16fp32: return std::make_unique<Plan<TrFp16Fp32>>(r, s);
    case Precision::bf16: return std::make_unique<Plan<TrBf16>>(r, s);
    default: break;
  }
  throw ValueError(std::string("fir: precision '") + precision_name(r.precision) +
                   "' is not supported (fp16, fp16fp32, bf16)");
}

}  // namespace fir
}  // namespace cuda
}  // namespace tc
