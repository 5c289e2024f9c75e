// "separable" (Podlozhnyuk 2007): a row pass then a column pass, each staging a tile with its apron
// in shared memory with coalesced loads. The kernel K (kh x kw) is written as a sum of r outer
// products a_i b_i^T: r = 1 for separable kernels (Gaussian, box, Sobel's factors), found by an
// SVD whose rank tolerance follows the precision; when the SVD finds full rank the plan uses the
// exact row decomposition K = sum_u e_u K[u,:] (r = min(kh, kw) passes), so any kernel is exact.
//
// Row pass: T[t, x] = sum_v b[v] in[t, x + v]; column pass: out[y, x] (+)= sum_u a[u] T[y + u, x].
// For kh, kw <= 64 and scalar precisions both run fused in one kernel with T in shared memory;
// fp16 (half2 lanes) and larger kernels use a row-pass kernel and a column-pass kernel.
// T (and the running sum over the r terms) is held in the precision's compute type. T is a ring
// of rows processed in bands when it would pass 1 GiB (TENSORCONV_SEPARABLE_BAND_MB sets the
// size: bands small enough to keep T in L2 were measured slower on the H100, 2026-11-22).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <type_traits>
#include <vector>

#include "../core/factories.hpp"
#include "common.cuh"
#include "precision.cuh"
#include "sliding.cuh"

namespace tc {
namespace cuda {
namespace {

constexpr int BX = 32, BY = 8, CT = 64;  // threads; taps per shared-memory chunk
constexpr int PITCH_T = BX + 1;          // transposed tiles: odd pitch, conflict-free both ways

template <Precision P>
constexpr int rows_per_thread() { return P == Precision::fp64 ? 8 : 16; }

// ---- row pass ------------------------------------------------------------------------------
// Lanes map to image rows (W rows per lane: t and t + BX), threadIdx.y to groups of R outputs
// along x. The tile is stored transposed (x down, rows across) so that the sliding window runs
// along x with conflict-free reads; results go back through shared memory for coalesced stores.
template <Precision P>
__global__ void __launch_bounds__(BX* BY)
    row_pass(const typename Prec<P>::Store* __restrict__ in, std::int64_t in_stride, int t0,
             int t1, int iw, typename Prec<P>::Elem* __restrict__ ring, int ring_rows, int ow,
             const typename Prec<P>::Vec* __restrict__ b, int kw) {
  using T = Prec<P>;
  using Vec = typename T::Vec;
  constexpr int R = rows_per_thread<P>(), OX = BY * R, W = T::W, TR = BX * W;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Vec* sb = reinterpret_cast<Vec*>(smem_raw);
  Vec* tile = sb + CT;
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * BX + tx;
  const int x0 = blockIdx.x * OX;
  for (int tb = t0 + blockIdx.y * TR; tb < t1; tb += gridDim.y * TR) {
    Vec acc[R];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = T::zero();
    for (int v0 = 0; v0 < kw; v0 += CT) {
      const int cv = imin(CT, kw - v0), arows = OX + cv - 1;
      __syncthreads();
      // Division-free staging: lanes along x (coalesced reads; the odd pitch keeps the
      // transposed shared stores conflict-free), warps over the block's rows.
      for (int r_ = ty; r_ < BX; r_ += BY) {
        const int t = tb + r_;
        const typename T::Store* row0 = in + t * in_stride;
        const typename T::Store* row1 = in + (t + BX) * in_stride;
#pragma unroll 2
        for (int a = tx; a < arows; a += BX) {
          const int x = x0 + v0 + a;
          typename T::Elem e0 = T::zero_elem(), e1 = T::zero_elem();
          if (x < iw) {
            if (t < t1) e0 = T::load(row0[x]);
            if (W == 2 && t + BX < t1) e1 = T::load(row1[x]);
          }
          tile[a * PITCH_T + r_] = T::pack(e0, e1);
        }
      }
      for (int i = tid; i < cv; i += BX * BY) sb[i] = b[v0 + i];
      __syncthreads();
      slide_column<T, R>(acc, tile + ty * R * PITCH_T + tx, PITCH_T, cv,
                         [&](int v) { return sb[v]; });
    }
    __syncthreads();  // reuse the tile to transpose the results
#pragma unroll
    for (int r = 0; r < R; ++r) tile[(ty * R + r) * PITCH_T + tx] = acc[r];
    __syncthreads();
    for (int tl = ty; tl < TR; tl += BY) {
      const int t = tb + tl;
      if (t >= t1) break;
      typename T::Elem* dst = ring + static_cast<std::int64_t>(t % ring_rows) * ow;
      for (int xl = tx; xl < OX; xl += BX) {
        const int x = x0 + xl;
        if (x < ow) dst[x] = T::lane(tile[xl * PITCH_T + (tl % BX)], tl / BX);
      }
    }
  }
}

// One result of term q: added to the running sum of the earlier terms (unless FIRST), written
// in the storage type to `out` (LAST) or back to the running sum.
template <Precision P, bool FIRST, bool LAST>
__device__ __forceinline__ void emit(typename Prec<P>::Elem v, int y, int x,
                                     typename Prec<P>::Elem* sum, std::int64_t sum_stride,
                                     typename Prec<P>::Store* out, std::int64_t out_stride) {
  if (!FIRST) v = Prec<P>::add_elem(v, sum[y * sum_stride + x]);
  if (LAST)
    __stcs(out + y * out_stride + x, Prec<P>::store(v));  // streamed: not read again here
  else
    sum[y * sum_stride + x] = v;
}

// ---- column pass ---------------------------------------------------------------------------
// Lanes map to columns (W per lane: x and x + BX), threadIdx.y to groups of R output rows.
// FIRST: no running sum to add; LAST: write the storage type to `out`, else the running sum.
template <Precision P, bool FIRST, bool LAST>
__global__ void __launch_bounds__(BX* BY)
    column_pass(const typename Prec<P>::Elem* __restrict__ ring, int ring_rows, int ow, int y0,
                int y1, int t_end, typename Prec<P>::Elem* sum, std::int64_t sum_stride,
                typename Prec<P>::Store* out, std::int64_t out_stride,
                const typename Prec<P>::Vec* __restrict__ a, int kh) {
  using T = Prec<P>;
  using Vec = typename T::Vec;
  constexpr int R = rows_per_thread<P>(), OH = BY * R, W = T::W;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Vec* sa = reinterpret_cast<Vec*>(smem_raw);
  Vec* tile = sa + CT;
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * BX + tx;
  const int xb = blockIdx.x * BX * W;
  for (int yb = y0 + blockIdx.y * OH; yb < y1; yb += gridDim.y * OH) {
    Vec acc[R];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = T::zero();
    for (int u0 = 0; u0 < kh; u0 += CT) {
      const int cu = imin(CT, kh - u0), rows = OH + cu - 1;
      __syncthreads();
      for (int r_ = ty; r_ < rows; r_ += BY) {
        const int t = yb + u0 + r_, x = xb + tx;
        typename T::Elem e0 = T::zero_elem(), e1 = T::zero_elem();
        if (t < t_end) {
          const typename T::Elem* row = ring + static_cast<std::int64_t>(t % ring_rows) * ow;
          if (x < ow) e0 = T::round(row[x]);
          if (W == 2 && x + BX < ow) e1 = T::round(row[x + BX]);
        }
        tile[r_ * BX + tx] = T::pack(e0, e1);
      }
      for (int i = tid; i < cu; i += BX * BY) sa[i] = a[u0 + i];
      __syncthreads();
      slide_column<T, R>(acc, tile + ty * R * BX + tx, BX, cu, [&](int u) { return sa[u]; });
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int y = yb + ty * R + r;
      if (y >= y1) break;
#pragma unroll
      for (int l = 0; l < W; ++l) {
        const int x = xb + tx + l * BX;
        if (x >= ow) continue;
        emit<P, FIRST, LAST>(T::lane(acc[r], l), y, x, sum, sum_stride, out, out_stride);
      }
    }
  }
}

// ---- fused pass (scalar precisions, kh and kw <= 64) -----------------------------------------
// One block walks down a strip of FW = 64 columns over SEG output rows. Row-filtered rows T live
// only in shared memory (FOH + kh - 1 of them); each step filters FOH new rows, column-filters
// FOH output rows, and shifts the kh - 1 rows the next step still needs. Input is read once
// (plus the apron), output written once: no T round trip through HBM and no second launch.
constexpr int FW = 2 * BX, FR = 8, FOH = BY * FR, FMAX = 64;
constexpr int PITCH_F = FW + 1;  // odd: the row pass stores T down a column conflict-free

template <Precision P>
std::size_t fused_smem(int kh, int kw) {
  using Vec = typename Prec<P>::Vec;
  return (2 * FMAX + (FW + kw - 1) * PITCH_T + (FOH + kh - 1) * PITCH_F) * sizeof(Vec);
}

template <Precision P, bool FIRST, bool LAST>
__global__ void __launch_bounds__(BX* BY)
    fused_pass(const typename Prec<P>::Store* __restrict__ in, std::int64_t in_stride, int ih,
               int iw, int oh, int ow, int seg, typename Prec<P>::Elem* sum,
               std::int64_t sum_stride, typename Prec<P>::Store* out, std::int64_t out_stride,
               const typename Prec<P>::Vec* __restrict__ a, int kh,
               const typename Prec<P>::Vec* __restrict__ b, int kw) {
  using T = Prec<P>;
  using Vec = typename T::Vec;
  static_assert(T::W == 1, "fused_pass is for scalar precisions");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Vec* sa = reinterpret_cast<Vec*>(smem_raw);
  Vec* sb = sa + FMAX;
  Vec* sin = sb + FMAX;                      // (FW + kw - 1) x-positions x BX rows (transposed)
  Vec* st = sin + (FW + kw - 1) * PITCH_T;   // (FOH + kh - 1) T rows x FW columns
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int xb = blockIdx.x * FW, ys = blockIdx.y * seg;
  const int y_end = min(oh, ys + seg), xa_n = FW + kw - 1;
  for (int i = ty * BX + tx; i < FMAX; i += BX * BY) {
    if (i < kh) sa[i] = a[i];
    if (i < kw) sb[i] = b[i];
  }
  // Row-filter image rows t0 .. t0 + n - 1 into T rows d .. d + n - 1, 32 rows (lanes) at a time.
  auto row_filter = [&](int t0, int n, int d) {
    for (int g = 0; g < n; g += BX) {
      __syncthreads();  // sin is free
      for (int r = ty; r < BX; r += BY) {
        const int t = t0 + g + r;
        const typename T::Store* row = in + static_cast<std::int64_t>(t) * in_stride;
#pragma unroll 2
        for (int xa = tx; xa < xa_n; xa += BX) {
          const int x = xb + xa;
          sin[xa * PITCH_T + r] = (t < ih && x < iw) ? T::load(row[x]) : T::zero_elem();
        }
      }
      __syncthreads();
      Vec acc[FR];
#pragma unroll
      for (int j = 0; j < FR; ++j) acc[j] = T::zero();
      slide_column<T, FR>(acc, sin + ty * FR * PITCH_T + tx, PITCH_T, kw,
                          [&](int v) { return sb[v]; });
      if (g + tx < n) {
        Vec* dst = st + (d + g + tx) * PITCH_F + ty * FR;
#pragma unroll
        for (int j = 0; j < FR; ++j) dst[j] = T::round(acc[j]);  // column-pass operand
      }
    }
  };
  row_filter(ys, FOH + kh - 1, 0);
  for (int y = ys; y < y_end; y += FOH) {
    if (y > ys) {
      __syncthreads();  // the previous column pass is done with st
      for (int i = ty; i < kh - 1; i += BY)  // keep the last kh - 1 rows (FOH >= kh - 1)
        for (int c = tx; c < FW; c += BX) st[i * PITCH_F + c] = st[(i + FOH) * PITCH_F + c];
      row_filter(y + kh - 1, FOH, kh - 1);
    }
    __syncthreads();
#pragma unroll
    for (int l = 0; l < 2; ++l) {
      Vec acc[FR];
#pragma unroll
      for (int j = 0; j < FR; ++j) acc[j] = T::zero();
      slide_column<T, FR>(acc, st + ty * FR * PITCH_F + tx + l * BX, PITCH_F, kh,
                          [&](int u) { return sa[u]; });
      const int x = xb + tx + l * BX;
#pragma unroll
      for (int j = 0; j < FR; ++j) {
        const int yy = y + ty * FR + j;
        if (yy < y_end && x < ow) emit<P, FIRST, LAST>(acc[j], yy, x, sum, sum_stride, out, out_stride);
      }
    }
  }
}

// ---- host: rank-revealing decomposition ----------------------------------------------------
// One-sided Jacobi SVD of an m x n column-major matrix (m >= n): A = U diag(s) V^T.
void jacobi_svd(std::vector<double>& A, int m, int n, std::vector<double>& V,
                std::vector<double>& s) {
  V.assign(static_cast<std::size_t>(n) * n, 0.0);
  for (int j = 0; j < n; ++j) V[j * n + j] = 1.0;
  for (int sweep = 0; sweep < 60; ++sweep) {
    double off = 0.0;
    for (int p = 0; p < n - 1; ++p) {
      for (int q = p + 1; q < n; ++q) {
        double* ap = &A[static_cast<std::size_t>(p) * m];
        double* aq = &A[static_cast<std::size_t>(q) * m];
        double alpha = 0, beta = 0, gamma = 0;
        for (int i = 0; i < m; ++i) {
          alpha += ap[i] * ap[i];
          beta += aq[i] * aq[i];
          gamma += ap[i] * aq[i];
        }
        if (gamma == 0.0) continue;
        const double rel = std::fabs(gamma) / std::sqrt(alpha * beta);
        if (!(rel > 1e-15)) continue;
        off = std::max(off, rel);
        const double zeta = (beta - alpha) / (2.0 * gamma);
        const double t = (zeta >= 0 ? 1.0 : -1.0) / (std::fabs(zeta) + std::sqrt(1.0 + zeta * zeta));
        const double c = 1.0 / std::sqrt(1.0 + t * t), sn = c * t;
        for (int i = 0; i < m; ++i) {
          const double x = ap[i], y = aq[i];
          ap[i] = c * x - sn * y;
          aq[i] = sn * x + c * y;
        }
        double* vp = &V[static_cast<std::size_t>(p) * n];
        double* vq = &V[static_cast<std::size_t>(q) * n];
        for (int i = 0; i < n; ++i) {
          const double x = vp[i], y = vq[i];
          vp[i] = c * x - sn * y;
          vq[i] = sn * x + c * y;
        }
      }
    }
    if (off <= 1e-15) break;
  }
  s.assign(n, 0.0);
  for (int j = 0; j < n; ++j) {
    double* aj = &A[static_cast<std::size_t>(j) * m];
    double nrm = 0;
    for (int i = 0; i < m; ++i) nrm += aj[i] * aj[i];
    s[j] = std::sqrt(nrm);
    if (s[j] > 0)
      for (int i = 0; i < m; ++i) aj[i] /= s[j];
  }
}

// Unit roundoff of the operands each precision multiplies.
double operand_eps(Precision p) {
  switch (p) {
    case Precision::fp16:
    case Precision::fp16fp32:
    case Precision::tf32: return std::ldexp(1.0, -11);
    case Precision::bf16: return std::ldexp(1.0, -8);
    case Precision::fp32: return std::ldexp(1.0, -24);
    case Precision::fp64: break;
  }
  return std::ldexp(1.0, -53);
}

struct Terms {
  int r = 0;
  std::vector<double> a, b;  // r x kh column factors, r x kw row factors
};

constexpr int kMaxSvd = 512;  // larger kernels skip the O(n^3) SVD and use the exact rows

Terms decompose(const double* k, int kh, int kw, Precision p) {
  Terms t;
  const int full = std::min(kh, kw);
  if (full <= kMaxSvd && full > 1) {
    const bool tall = kh >= kw;  // SVD of K (tall) or K^T, so that m >= n
    const int m = tall ? kh : kw, n = tall ? kw : kh;
    std::vector<double> A(static_cast<std::size_t>(m) * n), V, s;
    for (int i = 0; i < kh; ++i)
      for (int j = 0; j < kw; ++j)
        A[tall ? static_cast<std::size_t>(j) * m + i : static_cast<std::size_t>(i) * m + j] =
            k[static_cast<std::size_t>(i) * kw + j];
    jacobi_svd(A, m, n, V, s);
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int x, int y) { return s[x] > s[y]; });
    const double tol = operand_eps(p) * s[order[0]];
    int rank = 0;
    while (rank < n && s[order[rank]] > tol) ++rank;
    if (rank < full) {
      t.r = std::max(rank, 1);  // a zero kernel still runs one (zero) term
      t.a.resize(static_cast<std::size_t>(t.r) * kh);
      t.b.resize(static_cast<std::size_t>(t.r) * kw);
      for (int q = 0; q < t.r; ++q) {
        const int j = order[q];
        const double w = std::sqrt(s[j]);
        const double* u = &A[static_cast<std::size_t>(j) * m];  // length m
        const double* v = &V[static_cast<std::size_t>(j) * n];  // length n
        for (int i = 0; i < kh; ++i) t.a[q * kh + i] = w * (tall ? u[i] : v[i]);
        for (int i = 0; i < kw; ++i) t.b[q * kw + i] = w * (tall ? v[i] : u[i]);
      }
      return t;
    }
  }
  // Exact: one term per kernel row (a = unit vector) or per column (b = unit vector).
  const bool by_rows = kh <= kw;
  t.r = by_rows ? kh : kw;
  t.a.assign(static_cast<std::size_t>(t.r) * kh, 0.0);
  t.b.assign(static_cast<std::size_t>(t.r) * kw, 0.0);
  for (int q = 0; q < t.r; ++q) {
    if (by_rows) {
      t.a[q * kh + q] = 1.0;
      for (int j = 0; j < kw; ++j) t.b[q * kw + j] = k[static_cast<std::size_t>(q) * kw + j];
    } else {
      t.b[q * kw + q] = 1.0;
      for (int i = 0; i < kh; ++i) t.a[q * kh + i] = k[static_cast<std::size_t>(i) * kw + q];
    }
  }
  return t;
}

// Rows of T per band: the ring of T plus the band's input and output should fit in L2.
std::int64_t band_bytes() {
  if (const char* e = std::getenv("TENSORCONV_SEPARABLE_BAND_MB")) {
    const long mb = std::strtol(e, nullptr, 10);
    if (mb > 0) return static_cast<std::int64_t>(mb) << 20;
  }
  return std::int64_t(1) << 30;  // one band unless T passes 1 GiB: bands were measured slower
}

template <Precision P>
class SeparablePlan final : public CudaPlan {
  using T = Prec<P>;
  using Elem = typename T::Elem;
  using Vec = typename T::Vec;
  static constexpr bool kSumInOut = std::is_same<typename T::Store, Elem>::value;

 public:
  explicit SeparablePlan(const PlanRequest& r) : CudaPlan(r) {
    const Terms t = decompose(r.kernel, static_cast<int>(r.kh), static_cast<int>(r.kw), P);
    r_ = t.r;
    upload_coefficients<P>(t.a.data(), static_cast<std::int64_t>(t.a.size()), a_);
    upload_coefficients<P>(t.b.data(), static_cast<std::int64_t>(t.b.size()), b_);
    const std::int64_t oh = out_rows(), ow = out_cols();
    if (r_ > 1 && !kSumInOut) sum_.reset(oh * ow * sizeof(Elem));
    if constexpr (T::W == 1) {
      if (use_fused(r.kh, r.kw)) {
        setup_fused();
        return;
      }
    }
    constexpr int OH = BY * rows_per_thread<P>();
    std::int64_t rows = band_bytes() / (ow * static_cast<std::int64_t>(sizeof(Elem)));
    band_ = std::max<std::int64_t>(OH, rows / OH * OH);
    if (band_ >= oh) band_ = oh;
    ring_rows_ = std::min<std::int64_t>(ih_, band_ + kh_ - 1);
    ring_.reset(ring_rows_ * ow * sizeof(Elem));
  }
  std::size_t workspace_bytes() const override {
    return ring_.bytes() + sum_.bytes() + a_.bytes() + b_.bytes();
  }
  int rank() const { return r_; }

 private:
  // The fused pass (default for scalar precisions with kh, kw <= 64; TENSORCONV_SEPARABLE_FUSED=0
  // selects the two-pass form, kept for fp16's half2 lanes and larger kernels).
  static bool use_fused(std::int64_t kh, std::int64_t kw) {
    const char* e = std::getenv("TENSORCONV_SEPARABLE_FUSED");
    return kh <= FMAX && kw <= FMAX && !(e && e[0] == '0');
  }

  void setup_fused() {
    fused_ = true;
    smem_ = fused_smem<P>(static_cast<int>(kh_), static_cast<int>(kw_));
    int per_sm = 0;
    auto prepare = [&](auto kern) {
      TC_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(smem_)));
      TC_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, BX * BY, smem_));
    };
    prepare(fused_pass<P, true, true>);
    prepare(fused_pass<P, true, false>);
    prepare(fused_pass<P, false, true>);
    prepare(fused_pass<P, false, false>);
    if (per_sm < 1) throw DeviceError("separable: the fused pass does not fit on this device");
    // One wave of blocks: strips of FW columns x segments of `seg_` rows (each segment
    // recomputes kh - 1 rows of T, so segments are as long as the wave allows).
    const std::int64_t strips = (out_cols() + FW - 1) / FW;
    const std::int64_t slots = static_cast<std::int64_t>(per_sm) * sm_count();
    const std::int64_t splits = std::max<std::int64_t>(1, (slots + strips - 1) / strips);
    std::int64_t seg = (out_rows() + splits - 1) / splits;
    if (const char* e = std::getenv("TENSORCONV_SEPARABLE_SEGMENT"))  // tests: longer walks
      seg = std::max<std::int64_t>(seg, std::strtol(e, nullptr, 10));
    seg_ = std::max<std::int64_t>(FOH, (seg + FOH - 1) / FOH * FOH);
  }

 protected:
  void run_device(const Tensor2D& in, const Tensor2D& out, cudaStream_t stream) override {
    constexpr int R = rows_per_thread<P>();
    const int oh = static_cast<int>(out.rows), ow = static_cast<int>(out.cols);
    const int kh = static_cast<int>(kh_), kw = static_cast<int>(kw_);
    const int ring_rows = static_cast<int>(ring_rows_);
    Elem* sum = kSumInOut ? reinterpret_cast<Elem*>(out.data) : sum_.get<Elem>();
    const std::int64_t sum_stride = kSumInOut ? out.row_stride : ow;
    if constexpr (T::W == 1) {
      if (fused_) {
        const int seg = static_cast<int>(
            std::max<std::int64_t>(seg_, (ceil_div(oh, 65535) + FOH - 1) / FOH * FOH));
        const dim3 grid(ceil_div(ow, FW), ceil_div(oh, seg));
        for (int q = 0; q < r_; ++q) {
          const Vec* a = a_.get<Vec>() + static_cast<std::size_t>(q) * kh;
          const Vec* b = b_.get<Vec>() + static_cast<std::size_t>(q) * kw;
          auto launch = [&](auto kern) {
            kern<<<grid, dim3(BX, BY), smem_, stream>>>(
                in.ptr<typename T::Store>(), in.row_stride, static_cast<int>(in.rows),
                static_cast<int>(in.cols), oh, ow, seg, sum, sum_stride,
                out.ptr<typename T::Store>(), out.row_stride, a, kh, b, kw);
            TC_CUDA_LAUNCH_CHECK();
          };
          const bool first = q == 0, last = q == r_ - 1;
          if (first && last) launch(fused_pass<P, true, true>);
          else if (first) launch(fused_pass<P, true, false>);
          else if (last) launch(fused_pass<P, false, true>);
          else launch(fused_pass<P, false, false>);
        }
        return;
      }
    }
    const std::size_t row_smem = (CT + (BY * R + std::min(CT, kw) - 1) * PITCH_T) * sizeof(Vec);
    const std::size_t col_smem = (CT + (BY * R + std::min(CT, kh) - 1) * BX) * sizeof(Vec);
    const dim3 block(BX, BY);
    for (int q = 0; q < r_; ++q) {
      const Vec* a = a_.get<Vec>() + static_cast<std::size_t>(q) * kh;
      const Vec* b = b_.get<Vec>() + static_cast<std::size_t>(q) * kw;
      int done = 0;  // rows of T computed for this term
      for (int y0 = 0; y0 < oh; y0 += static_cast<int>(band_)) {
        const int y1 = static_cast<int>(std::min<std::int64_t>(oh, y0 + band_));
        const int need = y1 + kh - 1;
        const dim3 rgrid(ceil_div(ow, BY * R), std::min(ceil_div(need - done, BX * T::W), 65535));
        row_pass<P><<<rgrid, block, row_smem, stream>>>(
            in.ptr<typename T::Store>(), in.row_stride, done, need, static_cast<int>(in.cols),
            ring_.get<Elem>(), ring_rows, ow, b, kw);
        TC_CUDA_LAUNCH_CHECK();
        done = need;
        const dim3 cgrid(ceil_div(ow, BX * T::W), std::min(ceil_div(y1 - y0, BY * R), 65535));
        auto launch = [&](auto kern) {
          kern<<<cgrid, block, col_smem, stream>>>(ring_.get<Elem>(), ring_rows, ow, y0, y1, need,
                                                   sum, sum_stride, out.ptr<typename T::Store>(),
                                                   out.row_stride, a, kh);
          TC_CUDA_LAUNCH_CHECK();
        };
        const bool first = q == 0, last = q == r_ - 1;
        if (first && last) launch(column_pass<P, true, true>);
        else if (first) launch(column_pass<P, true, false>);
        else if (last) launch(column_pass<P, false, true>);
        else launch(column_pass<P, false, false>);
      }
    }
  }

 private:
  int r_ = 0;
  bool fused_ = false;
  std::size_t smem_ = 0;
  std::int64_t seg_ = 0, band_ = 0, ring_rows_ = 0;
  DeviceBuffer a_, b_, ring_, sum_;
};

}  // namespace
}  // namespace cuda

std::unique_ptr<Plan> make_separable_plan(const PlanRequest& r) {
  cuda::check_int_extent(r);
  return cuda::with_precision(r.precision, [&](auto tag) -> std::unique_ptr<Plan> {
    return std::make_unique<cuda::SeparablePlan<decltype(tag)::value>>(r);
  });
}

}  // namespace tc
