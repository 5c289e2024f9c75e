// toeplitz_tc: Paplinski's rcm (eq. 4) is a stack of banded Toeplitz blocks <H(u,.)>_C, one per
// kernel row u, so a tile of the valid correlation is
//   out[i0 + m][j0 + 8p + n] = sum_u sum_t img[i0 + u + m][j0 + 8p + t] * T_u[t][n],
//   T_u[t][n] = k[u][t - n]  (zero outside 0 <= t - n < kw),
// a sum over kernel rows of (image rows u..u+15) x (a band of kernel row u), accumulated in the
// tensor cores' registers: no diagonal sum (as im2tensor needs), no explicit S or rcm. The band
// is cut in KK-row chunks d (KK = the MMA's k: 16 for fp16/bf16, 8 for tf32/fp64), chunk d of
// group p meets the image tile at column 8p + KK d, B_d[k][n] = k[u][KK d + k - n]; its
// fragments come straight from a zero-padded copy of kernel row u (eq. 7's memory reference,
// not a materialised rcm). Work per output: kh * KK * ceil((kw + 7) / KK) multiply-adds vs
// kh * kw direct, so n = 8 output columns per MMA (the smallest) wastes the least.
// Image rows are staged once per CTA in a shared-memory ring (cp.async; tf32 rounded in place
// after the copy, once per element rather than per use) and serve every
// kernel row and every column shift; kernel rows are walked in steps of S rows, the next
// step's image rows copied while this one computes, so any kernel height fits. When one step
// holds the whole kernel, a CTA walks several row blocks down its column strip and the next
// block's new rows are copied during this one (no load-then-compute bubble per CTA). Kernels
// wider than 8 KK are walked in column blocks of DB chunks (accumulators stay in registers).
// Precisions: fp16, fp16fp32 and bf16 (m16n8k16, fp32 accumulator: fp16 too, since half
// accumulators measured slower on the H100), tf32 (m16n8k8), fp32 and fp64 on
// DMMA (m16n8k8 f64, sm_90; fp32 data widened to fp64 as read: exact products, fp64 sums, one
// rounding at the end).
// NaN/inf: the band's zero taps times inf give NaN where the direct sum has none, so a warp
// whose accumulators end non-finite recomputes its outputs by direct FMAs from global memory
// (a non-finite datum anywhere in a warp's tiles makes its MMA results non-finite, so a finite
// result proves the tiles were finite). Operands are rounded to tf32 by cvt.rna, not by bit
// arithmetic, which would turn CUDA's canonical NaN (0x7fffffff) into -0.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cuda/runtime/async_copy.cuh"
#include "cuda/runtime/band_mma.cuh"
#include "cuda/runtime/common.cuh"
#include "cuda/runtime/precision.cuh"

namespace tc {
namespace cuda {
namespace tz {

enum class AccKind { f32, f32x3, f64 };

// Per precision: image storage In, staged type S, band-table entry Coef, MMA k (KK),
// accumulation, and the default geometry Geo: output groups of 8 columns per warp (G), warps per
// CTA as WR x WC, CTAs per SM the registers must allow (MINB).
// PERM (k = 8 MMAs only): the MMA's k index is permuted so that lane q's two A columns, k = q
// and q + 4, are the adjacent image columns 2q and 2q + 1 (a sum over k may take any order if
// A and B agree): one 8- or 16-byte shared load per fragment row instead of two scalar ones, and
// the two B taps of a lane adjacent in the band table.
// UNR: kernel rows unrolled per loop trip (the compiler may then overlap one row's fragment
// loads with the other's MMAs).
// LDM (fp32-staged images, k = 8 MMAs): the four A values of a lane by one ldmatrix.x4 (the
// m8n8.b16 layout puts the 32-bit word (g, q) of an 8 x 4-float block in lane 4g + q, the
// m16n8k8 tf32 A layout) instead of four scalar shared loads.
// X3 (fp32 only): 3xTF32 instead of DMMA, big*big MMAs chained X3 chunks deep (see CfgX3).
// PF: the next kernel row's B fragments prefetched (1), not (0), or while they fit (-1).
// RE (tf32 with LDM): kernel rows walked in classes r, r + 8, r + 16, ..: row u + 8's A
// fragments are row u's upper half (image rows u + 8 + g) plus 8 new rows, loaded by ldmatrix.x2.
// SO (outputs of at most 4 bytes, 8 G a multiple of 32): a warp's 16 x 8 G outputs leave
// through its own shared-memory buffer, 8 rows at a time, so that each store instruction writes
// one row's 8 G contiguous outputs: output rows of 4096 - k + 1 floats start inside a 32-byte
// sector unless k = 1 mod 8, and the fragment layout's 32-byte row pieces then cost two sectors
// each.
// BS: the band table copied to shared memory once per CTA (after the ring, when it fits
// kBandSmem), its fragments then read by shared loads instead of L1-cached global ones.
// RO: the same row-wise stores through buffers in the image ring itself, 16 rows at once, when a
// CTA computes one row block and carries no rows (the ring is free after the last step's
// barrier): no extra shared memory, for geometries whose CTAs are too many per SM for SO's.
//
// A geometry is written by name: a spec derived from GeomDefaults states G, WR, WC and MINB and
// whichever switches differ from the defaults, and GeomOf<Spec> is its Geom, e.g.
//   struct Spec : GeomDefaults {
//     static constexpr int G = 8, WR = 4, WC = 2, MINB = 2;
//     static constexpr bool SO = true;
//   };
//   using Geo = GeomOf<Spec>;  // = Geom<8, 4, 2, 2, false, 1, false, 0, -1, false, true>
struct GeomDefaults {
  static constexpr bool PERM = false, LDM = false, RE = false, SO = false, RO = false, BS = false;
  static constexpr int UNR = 1, X3 = 0, PF = -1;
};
template <int G_, int WR_, int WC_, int MINB_, bool PERM_ = GeomDefaults::PERM,
          int UNR_ = GeomDefaults::UNR, bool LDM_ = GeomDefaults::LDM, int X3_ = GeomDefaults::X3,
          int PF_ = GeomDefaults::PF, bool RE_ = GeomDefaults::RE, bool SO_ = GeomDefaults::SO,
          bool RO_ = GeomDefaults::RO, bool BS_ = GeomDefaults::BS>
struct Geom {
  static constexpr int G = G_, WR = WR_, WC = WC_, MINB = MINB_, UNR = UNR_, X3 = X3_, PF = PF_;
  static constexpr bool PERM = PERM_, LDM = LDM_, RE = RE_, SO = SO_, RO = RO_, BS = BS_;
  static constexpr int TH = 16 * WR, TW = 8 * G * WC;  // CTA output rows, columns
  static_assert(WR * WC == 8, "eight warps per CTA");
};
template <class S>
using GeomOf = Geom<S::G, S::WR, S::WC, S::MINB, S::PERM, S::UNR, S::LDM, S::X3, S::PF, S::RE,
                    S::SO, S::RO, S::BS>;
template <Precision P> struct Cfg;
// fp16 accumulates in fp32 as fp16fp32 does (the same kernel): a half accumulator per kernel
// row, summed into fp32 per row, took 0.074 / 0.102 / 0.135 / 0.203 / 0.341 ms at k = 3 / 15 /
// 25 / 35 / 55 against fp32's 0.072 / 0.090 / 0.115 / 0.181 / 0.318 (H100, 4096², toeplitz_tune
// --round4), so it was dropped: fp32 sums are faster here and more accurate.
template <> struct Cfg<Precision::fp16> {
  using In = __half; using S = __half; using Coef = std::uint32_t; using Acc = float;
  static constexpr int KK = 16, kRings = 1;
  // Outputs through the warps' buffers (SO): H100, 4096^2, fp16fp32, kernel ms at k = 3 / 15 /
  // 25 / 35 / 55: 0.042 / 0.082 / 0.112 / 0.175 / 0.302 against 0.072 / 0.089 / 0.113 / 0.177 /
  // 0.302 with the fragments' own stores (toeplitz_tune --round13: half rows of 4096 - k + 1 elements
  // start mid-sector, and each 16-byte row piece cost two sectors).
  struct GeoSpec : GeomDefaults {
    static constexpr int G = 8, WR = 4, WC = 2, MINB = 2;
    static constexpr bool SO = true;
  };
  using Geo = GeomOf<GeoSpec>;
  static constexpr AccKind acc = AccKind::f32;
};
template <> struct Cfg<Precision::fp16fp32> : Cfg<Precision::fp16> {};
template <> struct Cfg<Precision::bf16> : Cfg<Precision::fp16fp32> {
  using In = float; using S = __nv_bfloat16;
};
// tf32 rounds the image once, as it is staged (round_rows); the fragments are then ldmatrix
// loads. Two geometries, by kernel area (H100, 4096², kernel ms):
//  - Geo (G = 8, two CTAs per SM, rows unrolled by 2, no B prefetch, outputs through the warps'
//    buffers: SO) for area <= kSmallArea and > kMidArea: 0.063 / 0.066 / 0.070 / 0.074 / 0.093
//    / 0.098 / 0.105 / 0.130 / 0.145 / 0.154 / 0.214 at k = 3 / 5 / 7 / 9 / 11 / 13 / 15 / 19 /
//    23 / 25 / 27 (toeplitz_tune --round14), 0.270 / 0.522 at k = 35 / 55;
//  - GeoMid (G = 8, three CTAs per SM in 72 KB each, so no carried rows at k = 15, rows unrolled
//    by 2, no B prefetch) between: 0.073 / 0.091 / 0.090 / 0.103 / 0.138 / 0.154 / 0.153 at k =
//    9 / 11 / 13 / 15 / 19 / 23 / 25 (--round14; k = 17 not measured, the bound 255 falls
//    between 15 and 19). With SO it was slower (0.106 vs 0.103 at k = 15, --round13) although
//    its misaligned output rows cost ~11 %: the same kernel writing rows padded to 8 floats
//    took 0.092 ms (--round12). RO (the ring as the buffers) where rows are 8 bytes off 16:
//    0.101 at k = 15 (launch_db). BS (the band table in shared memory, --round17): 0.065 /
//    0.097 / 0.101 / 0.119 / 0.145 at k = 9 / 13 / 15 / 19 / 25 against 0.070 / 0.100 / 0.101 /
//    0.130 / 0.154.
// Before SO a G = 4 geometry at three CTAs per SM took kernels up to area 64 (0.070 at k = 3).
template <> struct Cfg<Precision::tf32> {
  using In = float; using S = float; using Coef = float; using Acc = float;
  static constexpr int KK = 8, kRings = 1;
  struct GeoSpec : GeomDefaults {
    static constexpr int G = 8, WR = 4, WC = 2, MINB = 2, UNR = 2, PF = 0;
    static constexpr bool LDM = true, SO = true;
  };
  struct GeoMidSpec : GeomDefaults {
    static constexpr int G = 8, WR = 4, WC = 2, MINB = 3, UNR = 2, PF = 0;
    static constexpr bool LDM = true, RO = true, BS = true;
  };
  using Geo = GeomOf<GeoSpec>;
  using GeoMid = GeomOf<GeoMidSpec>;
  static constexpr long long kSmallArea = 49, kMidArea = 255;
  static constexpr AccKind acc = AccKind::f32;
};
template <> struct Cfg<Precision::fp64> {
  using In = double; using S = double; using Coef = double; using Acc = double;
  static constexpr int KK = 8, kRings = 1;
  // H100, 4096^2, kernel ms at k = 3 / 9 / 15 / 25 / 35 (toeplitz_tune --round8, --round9): G = 6 0.119 /
  // 0.157 / 0.242 / 0.482 / 0.949, G = 2 (before) 0.121 / - / 0.301 / 0.556 / 0.952, G = 4
  // 0.121 / - / 0.295 / 0.497 / 0.945. More groups per warp reuse each A fragment more often;
  // ptxas spills up to ~70 bytes at G = 6 and it is still the fastest.
  struct GeoSpec : GeomDefaults {
    static constexpr int G = 6, WR = 4, WC = 2, MINB = 2;
  };
  using Geo = GeomOf<GeoSpec>;
  static constexpr AccKind acc = AccKind::f64;
};
// fp32 on DMMA: fp32 image staged as is (half fp64's bytes), widened to fp64 as fragments are
// read, taps the fp32 kernel's values in fp64: exact products summed in fp64, one rounding to
// fp32 at the store. Measured against 3xTF32 on the same H100 (4096², harness): fp64 DMMA took
// 0.31 / 0.57 / 1.02 / 2.14 ms at k = 15 / 25 / 35 / 55 where 3xTF32 (three tf32 MMAs per band
// chunk plus a Fast2Sum per big*big product to undo the MMA's truncating fp32 sums) took
// 0.38 / 0.74 / 1.47 / 2.79, so 3xTF32 was dropped: DMMA is faster and more accurate. toeplitz_tune
// --round4 measured a leaner 3xTF32 (CfgX3 below: split once as staged, ldmatrix, Fast2Sum per chain
// of L big*big MMAs): 0.098-0.12 / 0.29-0.37 / 0.53-0.68 / 0.88-1.33 / 1.73-2.68 ms at k = 3 /
// 15 / 25 / 35 / 55 over six geometries and chain lengths, against DMMA's 0.082 / 0.257 /
// 0.498 / 0.967 / 1.951 — still slower; mma.sync tf32 ran ~3x DMMA's MMA rate, not the >3x
// three products need. DMMA also reads fp32 by ldmatrix slower (0.281 vs 0.257 at k = 15).
template <> struct Cfg<Precision::fp32> : Cfg<Precision::fp64> {
  using In = float; using S = float;
  // G = 7 without the B prefetch (the registers go to the accumulators). H100, 4096^2, kernel ms
  // at k = 3 / 9 / 15 / 25 / 35 / 55 (toeplitz_tune --round8, --round9): 0.089 / 0.118 / 0.221 / 0.451 /
  // 0.914 / 1.872; G = 4 (before) 0.082 / 0.128 / 0.257 / 0.500 / 0.967 / 1.952; G = 5 and 6,
  // with or without the prefetch, in between; G = 2 0.289 / 0.555 at k = 15 / 25.
  struct GeoSpec : GeomDefaults {
    static constexpr int G = 7, WR = 4, WC = 2, MINB = 2, PF = 0;
  };
  using Geo = GeomOf<GeoSpec>;
};
// fp32 by 3xTF32 (Geom X3 = L > 0): x = hi + lo with hi = tf32(x), lo = tf32(x - hi) (the
// image split once as staged: hi in the ring, lo in a second ring; the kernel's split in the
// band table, (hi, lo) per tap), out = hi*hi + (hi*lo + lo*hi) (lo*lo, ~2^-24 of a product, and
// the 2 bits lo loses to tf32 are below fp32's rounding). The cross terms share one fp32
// accumulator (their truncation errors are ~2^-11 of the result's). The MMA's fp32 sums
// truncate, which biased long positive sums when big*big ran in one accumulator, so big*big
// runs L chunks deep from zero and each such partial joins the sum by Fast2Sum (its rounding
// error to the cross-term accumulator): the truncation bias then scales with the partial, not
// the sum. Acc (the fallback's type) stays fp64. Measured (--round4, MAPE vs float64 on U[0, 1)
// data): L = 1 3.1-3.8e-6 %, L = 2 4.3-6.1e-6 %, one chain per kernel row 6.6e-6 % at k = 15
// up to 2.3e-5 % at k = 55 (past fp32's 1e-5 % goal). A tuning variant: no plan selects it
// (slower than DMMA above); benchmarks/harness/toeplitz_tune.cu times it.
struct CfgX3 {
  using In = float; using S = float; using Coef = float2; using Acc = double;
  static constexpr int KK = 8, kRings = 2;
  static constexpr AccKind acc = AccKind::f32x3;
};
template <Precision P, class Gm>
using CfgOf = std::conditional_t<P == Precision::fp32 && (Gm::X3 > 0), CfgX3, Cfg<P>>;

constexpr int kWarps = 8;

struct Args {
  const void* in;
  long long in_ld;
  void* out;
  long long out_ld;
  int ih, iw, oh, ow, kh, kw;
  const void* band;  // kh rows of lp Coef: entry i of row u is kernel tap i - 8 (zero outside)
  int lp;
  const void* kd;  // kh x kw taps in the accumulator type, rounded as the operands: the fallback
  int S, R, ld;    // kernel rows per step, ring rows, shared row stride (elements)
  int nblk, ncb;   // column blocks of DB chunks; CTA columns
  int nph;         // row blocks a CTA walks down its column strip
  bool carry;      // nph > 1: the next row block's new rows are copied during this one
  bool vec_ok;     // 16-byte cp.async from the image rows
  bool pair_ok;    // two neighbouring outputs per store
  int so_off;      // Geom SO: byte offset of the warps' output buffers in shared memory
  bool ring_out;   // Geom RO: one row block per CTA, no carried rows, the ring holds the buffers
  int band_off;    // Geom BS: byte offset of the band table in shared memory (-1: global)
};

// Geom SO's per-warp output buffer: 8 rows of 8 G outputs, rows padded so that the fragment
// layout's stores (rows g = 0..7, 8-byte pairs) spread over the banks.
template <class Out, int G> struct SoBuf {
  static constexpr int V = 8 * G / 32;                     // outputs per lane and row
  static constexpr int LD = 8 * G + 32 / sizeof(Out);      // row stride, elements
  static constexpr std::size_t bytes = static_cast<std::size_t>(kWarps) * 8 * LD * sizeof(Out);
};

// ---- m16n8k16 (fp16 / bf16 operands) --------------------------------------------------------
template <class AB>
__device__ __forceinline__ void mma16_f32(float (&d)[4], const std::uint32_t (&a)[4], uint2 b) {
  if constexpr (std::is_same_v<AB, __half>) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.x), "r"(b.y));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.x), "r"(b.y));
  }
}
// D = A B (tf32, the accumulator's input zero): a chain of big*big products starts here.
__device__ __forceinline__ void mma_tf32_zero(float (&d)[4], const unsigned (&a)[4], uint2 b) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%10,%10,%10,%10};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.x), "r"(b.y), "f"(0.f));
}
__device__ __forceinline__ void ldmatrix_x2(std::uint32_t (&r)[2], const void* p) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1]) : "r"(s));
}
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], const void* p) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
}

// Two adjacent shared-memory elements (PERM fragments), one 8- or 16-byte load.
__device__ __forceinline__ void ld_pair(float& x, float& y, const float* p) {
  const float2 v = *reinterpret_cast<const float2*>(p);
  x = v.x;
  y = v.y;
}
__device__ __forceinline__ void ld_pair(double& x, double& y, const double* p) {
  const double2 v = *reinterpret_cast<const double2*>(p);
  x = v.x;
  y = v.y;
}

template <class S> __device__ __forceinline__ S to_stage(float x);
template <> __device__ __forceinline__ __half to_stage<__half>(float x) {
  return __float2half_rn(x);
}
template <> __device__ __forceinline__ __nv_bfloat16 to_stage<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <> __device__ __forceinline__ float to_stage<float>(float x) { return x; }
template <> __device__ __forceinline__ double to_stage<double>(float x) { return x; }

template <class S, class In> __device__ __forceinline__ S stage_cast(In x) {
  if constexpr (std::is_same_v<S, In>) return x;
  else return to_stage<S>(static_cast<float>(x));
}

// 3xTF32: x = hi + lo, both tf32 (cvt.rna: NaN stays NaN, inf gives lo = NaN: the fallback).
__device__ __forceinline__ void split_tf32(float x, float& hi, float& lo) {
  hi = round_to_tf32(x);
  lo = round_to_tf32(x - hi);
}

// Staged fp32 rounded after the copy: tf32, and 3xTF32's split (hi in place, lo in ring 2).
template <Precision P, class Gm>
constexpr bool kRoundStaged =
    P == Precision::tf32 || CfgOf<P, Gm>::acc == AccKind::f32x3;

// Which 16-byte chunk of a staged row a thread copies (and, for tf32, rounds): a fixed column
// chunk ch, rows rr0, rr0 + RP, .. of the window, so that a pass over the rows costs a pointer
// and a ring-slot increment per chunk instead of a division (the copy loop was ~35 instructions
// per 16 bytes; H100 ncu, tf32 k = 15: staging was ~30 % of the kernel's instructions).
template <class S, int CW> struct StageMap {
  static constexpr int E = 16 / sizeof(S);          // elements per chunk
  static constexpr int nch = (CW + E - 1) / E;      // chunks per row
  static constexpr int RP = (kWarps * 32) / nch;    // rows per pass
  static_assert(RP >= 1, "a CTA's threads cover one staged row");
  int ch, rr0;
  __device__ StageMap() : ch(threadIdx.x % nch), rr0(threadIdx.x / nch) {}
  __device__ bool idle() const { return rr0 >= RP; }
};

// Rows [lo, hi) of the CTA's image window (relative to r0), columns cs.. (CW of them, rounded
// up to 16 bytes), into ring slots row % R. Rows and columns past the image are zero.
template <Precision P, class Gm, int CW>
__device__ __forceinline__ void stage_rows(const Args& a, typename CfgOf<P, Gm>::S* sm, int r0,
                                           int cs, int lo, int hi) {
  using S = typename CfgOf<P, Gm>::S;
  using In = typename CfgOf<P, Gm>::In;
  using M = StageMap<S, CW>;
  constexpr int E = M::E;
  const M m;
  if (m.idle() || lo + m.rr0 >= hi) return;
  const In* img = static_cast<const In*>(a.in);
  const int gc = cs + m.ch * E;
  int slot = (lo + m.rr0) % a.R;  // hi - lo <= R rows: walked with one wrap at most
  int gr = r0 + lo + m.rr0;
  S* col = sm + m.ch * E;
  if (a.vec_ok && (std::is_same_v<S, In> || kRoundStaged<P, Gm>)) {
    // raw image bytes by cp.async (tf32 and 3xTF32: rounded / split by round_rows after the wait)
    int cb = (a.iw - gc) * static_cast<int>(sizeof(In));
    cb = cb < 0 ? 0 : (cb > 16 ? 16 : cb);
    const In* src = img + static_cast<long long>(gr) * a.in_ld + gc;
    const long long step = static_cast<long long>(M::RP) * a.in_ld;
    for (int rr = lo + m.rr0; rr < hi; rr += M::RP) {
      const int bytes = gr < a.ih ? cb : 0;
      cp_async_bytes(col + static_cast<std::size_t>(slot) * a.ld, bytes ? src : img, bytes);
      src += step;
      gr += M::RP;
      slot += M::RP;
      if (slot >= a.R) slot -= a.R;
    }
    return;
  }
  for (int rr = lo + m.rr0; rr < hi; rr += M::RP) {
    S* dst = col + static_cast<std::size_t>(slot) * a.ld;
    const In* src = img + static_cast<long long>(gr) * a.in_ld + gc;
    if constexpr (kRoundStaged<P, Gm>) {  // unaligned fp32 rows: through registers, rounded here
      float v[4] = {0.f, 0.f, 0.f, 0.f};
      if (gr < a.ih) {
#pragma unroll
        for (int e = 0; e < 4; ++e) v[e] = gc + e < a.iw ? src[e] : 0.f;
      }
      // cvt.rna: NaN stays NaN (bit arithmetic would not)
      if constexpr (CfgOf<P, Gm>::acc == AccKind::f32x3) {
        float h[4], l[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) split_tf32(v[e], h[e], l[e]);
        *reinterpret_cast<float4*>(dst) = make_float4(h[0], h[1], h[2], h[3]);
        *reinterpret_cast<float4*>(dst + static_cast<std::size_t>(a.R) * a.ld) =
            make_float4(l[0], l[1], l[2], l[3]);
      } else {
        *reinterpret_cast<float4*>(dst) = make_float4(round_to_tf32(v[0]), round_to_tf32(v[1]),
                                                      round_to_tf32(v[2]), round_to_tf32(v[3]));
      }
    } else {
#pragma unroll
      for (int e = 0; e < E; ++e) {
        const bool in = gr < a.ih && gc + e < a.iw;
        dst[e] = in ? stage_cast<S>(src[e]) : to_stage<S>(0.f);
      }
    }
    gr += M::RP;
    slot += M::RP;
    if (slot >= a.R) slot -= a.R;
  }
}

// tf32 with 16-byte copies: after cp_async_wait_all, each thread rounds the chunks it copied
// itself in stage_rows (the same StageMap, so no barrier is needed between the copy and this
// pass). Once per element, and the copies stay asynchronous (staging through registers stalled
// the CTA's warps on global latency: 0.115 -> 0.096 ms at k = 3, 0.152 -> 0.136 at k = 15, H100).
template <Precision P, class Gm, int CW>
__device__ __forceinline__ void round_rows(const Args& a, typename CfgOf<P, Gm>::S* sm, int lo,
                                           int hi) {
  if constexpr (kRoundStaged<P, Gm>) {
    if (!a.vec_ok) return;  // rounded as staged
    using M = StageMap<float, CW>;
    const M m;
    if (m.idle()) return;
    int slot = (lo + m.rr0) % a.R;
    float* col = sm + m.ch * 4;
    for (int rr = lo + m.rr0; rr < hi; rr += M::RP) {
      float* dst = col + static_cast<std::size_t>(slot) * a.ld;
      const float4 f = *reinterpret_cast<const float4*>(dst);
      if constexpr (CfgOf<P, Gm>::acc == AccKind::f32x3) {
        float4 h, l;
        split_tf32(f.x, h.x, l.x);
        split_tf32(f.y, h.y, l.y);
        split_tf32(f.z, h.z, l.z);
        split_tf32(f.w, h.w, l.w);
        *reinterpret_cast<float4*>(dst) = h;
        *reinterpret_cast<float4*>(dst + static_cast<std::size_t>(a.R) * a.ld) = l;
      } else {
        *reinterpret_cast<float4*>(dst) = make_float4(round_to_tf32(f.x), round_to_tf32(f.y),
                                                      round_to_tf32(f.z), round_to_tf32(f.w));
      }
      slot += M::RP;
      if (slot >= a.R) slot -= a.R;
    }
  }
}

template <class Out, class Acc> __device__ __forceinline__ Out store_out(Acc x) {
  if constexpr (std::is_same_v<Out, __half>) return __float2half_rn(static_cast<float>(x));
  else return static_cast<Out>(x);
}

__device__ __forceinline__ void store_pair(__half* o, __half a, __half b) {
  *reinterpret_cast<__half2*>(o) = __halves2half2(a, b);
}
__device__ __forceinline__ void store_pair(float* o, float a, float b) {
  *reinterpret_cast<float2*>(o) = make_float2(a, b);
}
__device__ __forceinline__ void store_pair(double* o, double a, double b) {
  *reinterpret_cast<double2*>(o) = make_double2(a, b);
}

// Geom SO / RO: NR rows of a warp's buffer (row stride SoBuf::LD) to output rows i0.., a store
// instruction per row, lane l writing its V contiguous outputs from column jl.
template <int NR, int G, class Out>
__device__ __forceinline__ void store_rows(const Args& a, Out* out, const Out* wb, int i0, int jl,
                                           int lane) {
  using B = SoBuf<Out, G>;
#pragma unroll
  for (int r = 0; r < NR; ++r) {
    const int i = i0 + r;
    if (i >= a.oh) break;
    const Out* b = wb + r * B::LD + B::V * lane;
    Out* o = out + static_cast<long long>(i) * a.out_ld + jl;
    if constexpr (B::V == 2) {
      if (a.pair_ok && jl + 1 < a.ow) {
        store_pair(o, b[0], b[1]);
        continue;
      }
    }
#pragma unroll
    for (int e = 0; e < B::V; ++e)
      if (jl + e < a.ow) o[e] = b[e];
  }
}

// Whether a geometry's outputs leave through the per-warp buffers (Geom SO, where it applies).
template <Precision P, class Gm>
constexpr bool kStagedOut =
    Gm::SO && sizeof(typename Prec<P>::Store) <= 4 && (8 * Gm::G) % 32 == 0;
template <Precision P, class Gm>
constexpr bool kRingOut =
    Gm::RO && !Gm::SO && sizeof(typename Prec<P>::Store) <= 4 && (8 * Gm::G) % 32 == 0;

template <Precision P, class Gm, int DB>
__global__ void __launch_bounds__(kWarps * 32, Gm::MINB) toeplitz_kernel(Args a) {
  using C = CfgOf<P, Gm>;
  using S = typename C::S;
  using Coef = typename C::Coef;
  using Acc = typename C::Acc;
  constexpr bool X3 = C::acc == AccKind::f32x3;
  using AccR = std::conditional_t<X3, float, Acc>;  // the accumulators' type
  constexpr int KK = C::KK, G = Gm::G, TH = Gm::TH, TW = Gm::TW;
  constexpr int KS = KK / 8;               // chunk step in 8-column tiles
  constexpr int NC = G + KS * (DB - 1);    // A tiles a warp reads per kernel row
  constexpr int CW = TW - 8 + KK * DB;     // staged columns per block
  constexpr bool PERM = Gm::PERM && KK == 8;
  constexpr bool LDM = (Gm::LDM || X3) && KK == 8 && std::is_same_v<S, float>;
  constexpr int L3 = X3 ? Gm::X3 : 1;  // big*big chain length
  constexpr bool RE = Gm::RE && LDM && C::acc == AccKind::f32;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  S* sm = reinterpret_cast<S*>(smem_raw);
  if constexpr (Gm::BS) {
    if (a.band_off >= 0) {  // read after the first staging's barrier
      Coef* sb = reinterpret_cast<Coef*>(smem_raw + a.band_off);
      const Coef* gb = static_cast<const Coef*>(a.band);
      for (int i = threadIdx.x; i < a.kh * a.lp; i += kWarps * 32) sb[i] = gb[i];
    }
  }
  // Rows are counted from the CTA's first output row r0 (ring slot: row % R); row block t of
  // the strip starts at rt = t TH.
  const int cb = blockIdx.x % a.ncb, rbg = blockIdx.x / a.ncb;
  const int r0 = rbg * a.nph * TH, c0 = cb * TW;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
  const int wrow = 16 * (warp / Gm::WC), wcol = 8 * G * (warp % Gm::WC);
  const int nrows = TH + a.kh - 1;  // window rows of a row block (past ih: zeros)
  // Lane row offsets inside an A tile (ldmatrix: lane -> row (lane & 7) + 8 ((lane >> 3) & 1),
  // column 8 (lane >> 4); scalar loads: rows g and g + 8, columns q and q + 4).
  const int mrow0 = KK == 16 || LDM ? (lane & 7) + (lane & 8) : g;
  const int mcol = KK == 16 ? 8 * (lane >> 4) : LDM ? 4 * (lane >> 4) : PERM ? 2 * q : q;
  const std::size_t ring2 = static_cast<std::size_t>(a.R) * a.ld;  // 3xTF32: the lo ring

  for (int t = 0; t < a.nph; ++t) {
  const int rt = t * TH;
  if (r0 + rt >= a.oh) break;  // CTA-uniform
  const bool active = r0 + rt + wrow < a.oh && c0 + wcol < a.ow;  // warp-uniform

  AccR acc[G][4];
  float acc2[X3 ? G : 1][4];  // 3xTF32: cross terms and the big sums' rounding errors
#pragma unroll
  for (int p = 0; p < G; ++p)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[p][e] = 0;
#pragma unroll
  for (int p = 0; p < (X3 ? G : 1); ++p)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc2[p][e] = 0.f;

  for (int blk = 0; blk < a.nblk; ++blk) {
    const int cs = c0 + KK * DB * blk;
    if (t == 0 || !a.carry) {  // carried: copied during the previous row block
      stage_rows<P, Gm, CW>(a, sm, r0, cs, rt, rt + min(nrows, TH + a.S - 1));
      cp_async_wait_all();
      round_rows<P, Gm, CW>(a, sm, rt, rt + min(nrows, TH + a.S - 1));
      __syncthreads();
    }
    for (int u0 = 0; u0 < a.kh; u0 += a.S) {
      int slo = 0, shi = 0;  // rows copied during this step
      if (u0 + a.S < a.kh) {  // the next step's new rows, into slots this step does not read
        slo = rt + TH + a.S - 1 + u0;
        shi = min(rt + nrows, slo + a.S);
      } else if (a.carry && t + 1 < a.nph) {  // S = kh, one block: the next row block's rows
        slo = rt + nrows;
        shi = rt + TH + nrows;
      }
      if (shi > slo) stage_rows<P, Gm, CW>(a, sm, r0, cs, slo, shi);
      if (active) {
        const int u1 = min(u0 + a.S, a.kh);
        // B_d fragments of kernel row u: lane (g, q) holds column n = g, rows k = kq and
        // kq + KK/2 (kq = q; m16n8k16: the pairs 2q, 2q + 1), i.e. taps KK d + kq - g and
        // KK d + kq + KK/2 - g (16-bit: one packed pair each). The next row's are loaded while
        // this one computes.
        const Coef* band =
            static_cast<const Coef*>(a.band) + 8 + KK * DB * blk + (PERM ? 2 : KS) * q - g;
        Coef bx[DB], by[DB];
        auto load_b = [&](int u, Coef (&x)[DB], Coef (&y)[DB]) {
          if constexpr (Gm::BS) {
            if (a.band_off >= 0) {
              const Coef* br = reinterpret_cast<const Coef*>(smem_raw + a.band_off) + 8 +
                               KK * DB * blk + (PERM ? 2 : KS) * q - g + u * a.lp;
#pragma unroll
              for (int d = 0; d < DB; ++d) {
                x[d] = br[KK * d];
                y[d] = br[KK * d + (PERM ? 1 : KK / 2)];
              }
              return;
            }
          }
          const Coef* br = band + static_cast<long long>(u) * a.lp;
#pragma unroll
          for (int d = 0; d < DB; ++d) {
            x[d] = __ldg(br + KK * d);
            y[d] = __ldg(br + KK * d + (PERM ? 1 : KK / 2));
          }
        };
        // The next row's fragments are prefetched only while they fit: with fp64 taps and 6-8
        // chunks the second set spilled (ptxas) at two CTAs per SM.
        constexpr bool kPrefetch = Gm::PF < 0 ? 2 * DB * sizeof(Coef) <= 64 : Gm::PF > 0;
        if constexpr (RE) {
          for (int r = 0; r < 8 && u0 + r < u1; ++r) {
            std::uint32_t A[NC][4];
#pragma unroll 1
            for (int u = u0 + r; u < u1; u += 8) {
              load_b(u, bx, by);
              if (u == u0 + r) {  // rows u + g, u + 8 + g
                const S* p0 = sm + static_cast<std::size_t>((rt + wrow + u + mrow0) % a.R) * a.ld +
                              wcol + mcol;
#pragma unroll
                for (int c = 0; c < NC; ++c) ldmatrix_x4(A[c], p0 + 8 * c);
              } else {  // rows u + g were row u - 8's upper half; rows u + 8 + g are new
                const S* p8 = sm +
                              static_cast<std::size_t>((rt + wrow + u + 8 + (lane & 7)) % a.R) *
                                  a.ld +
                              wcol + 4 * ((lane >> 3) & 1);
#pragma unroll
                for (int c = 0; c < NC; ++c) {
                  std::uint32_t t2[2];
                  ldmatrix_x2(t2, p8 + 8 * c);
                  A[c][0] = A[c][1];
                  A[c][2] = A[c][3];
                  A[c][1] = t2[0];
                  A[c][3] = t2[1];
                }
              }
#pragma unroll
              for (int c = 0; c < NC; ++c)
#pragma unroll
                for (int d = 0; d < DB; ++d) {
                  const int p = c - d;
                  if (p < 0 || p >= G) continue;
                  BandTf32::mma(acc[p], A[c],
                                make_uint2(__float_as_uint(bx[d]), __float_as_uint(by[d])));
                }
            }
          }
        } else {
        if (kPrefetch) load_b(u0, bx, by);
        int s0 = (rt + wrow + u0 + mrow0) % a.R;  // ring slot of this lane's row, walked below
#pragma unroll Gm::UNR
        for (int u = u0; u < u1; ++u) {
          Coef nx[kPrefetch ? DB : 1], ny[kPrefetch ? DB : 1];
          if constexpr (kPrefetch) load_b(u + 1 < u1 ? u + 1 : u, nx, ny);
          else load_b(u, bx, by);
          int s8 = s0 + 8;
          if (s8 >= a.R) s8 -= a.R;
          const S* row0 = sm + static_cast<std::size_t>(s0) * a.ld + wcol + mcol;
          const S* row8 = sm + static_cast<std::size_t>(s8) * a.ld + wcol + mcol;
          if constexpr (KK == 16) {
#pragma unroll
            for (int c = 0; c < NC; ++c) {
              std::uint32_t af[4];
              ldmatrix_x4(af, row0 + 8 * c);  // this lane's row is mrow0 (0..15)
#pragma unroll
              for (int d = 0; d < DB; ++d) {
                const int p = c - KS * d;
                if (p < 0 || p >= G) continue;
                mma16_f32<S>(acc[p], af, make_uint2(bx[d], by[d]));
              }
            }
          } else {
            const Coef* b0 = bx;
            const Coef* b1 = by;
            float tb[X3 ? G : 1][4];  // 3xTF32: big*big partials, L3 chunks deep
#pragma unroll
            for (int c = 0; c < NC; ++c) {
              S x[4];
              if constexpr (LDM) {
                std::uint32_t r[4];
                ldmatrix_x4(r, row0 + 8 * c);
#pragma unroll
                for (int e = 0; e < 4; ++e) x[e] = __uint_as_float(r[e]);
              } else if constexpr (PERM) {
                ld_pair(x[0], x[2], row0 + 8 * c);
                ld_pair(x[1], x[3], row8 + 8 * c);
              } else {
                x[0] = row0[8 * c]; x[1] = row8[8 * c]; x[2] = row0[8 * c + 4]; x[3] = row8[8 * c + 4];
              }
              if constexpr (C::acc == AccKind::f64) {
                const double af[4] = {x[0], x[1], x[2], x[3]};
#pragma unroll
                for (int d = 0; d < DB; ++d) {
                  const int p = c - d;
                  if (p < 0 || p >= G) continue;
                  BandF64::mma(acc[p], af, make_double2(b0[d], b1[d]));
                }
              } else if constexpr (X3) {
                unsigned hi[4], lo[4];  // split when staged
                std::uint32_t r[4];
                ldmatrix_x4(r, row0 + ring2 + 8 * c);
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                  hi[e] = __float_as_uint(x[e]);
                  lo[e] = r[e];
                }
#pragma unroll
                for (int d = 0; d < DB; ++d) {
                  const int p = c - d;
                  if (p < 0 || p >= G) continue;
                  const uint2 bh = make_uint2(__float_as_uint(b0[d].x), __float_as_uint(b1[d].x));
                  const uint2 bl = make_uint2(__float_as_uint(b0[d].y), __float_as_uint(b1[d].y));
                  if (d % L3 == 0) mma_tf32_zero(tb[p], hi, bh);
                  else BandTf32::mma(tb[p], hi, bh);
                  BandTf32::mma(acc2[p], hi, bl);
                  BandTf32::mma(acc2[p], lo, bh);
                  if (d % L3 == L3 - 1 || d == DB - 1) {  // Fast2Sum (|acc| >= |tb| mostly)
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                      const float s = acc[p][e] + tb[p][e];
                      acc2[p][e] += (acc[p][e] - s) + tb[p][e];
                      acc[p][e] = s;
                    }
                  }
                }
              } else if constexpr (C::acc == AccKind::f32) {
                unsigned af[4];  // rounded to tf32 when staged
#pragma unroll
                for (int e = 0; e < 4; ++e) af[e] = __float_as_uint(x[e]);
#pragma unroll
                for (int d = 0; d < DB; ++d) {
                  const int p = c - d;
                  if (p < 0 || p >= G) continue;
                  BandTf32::mma(acc[p], af,
                                make_uint2(__float_as_uint(b0[d]), __float_as_uint(b1[d])));
                }
              }
            }
          }
          if constexpr (kPrefetch) {
#pragma unroll
            for (int d = 0; d < DB; ++d) {
              bx[d] = nx[d];
              by[d] = ny[d];
            }
          }
          if (++s0 == a.R) s0 = 0;
        }
        }  // RE
      }
      cp_async_wait_all();
      if (shi > slo) round_rows<P, Gm, CW>(a, sm, slo, shi);
      __syncthreads();
    }
  }
  if (!active) continue;

  bool bad = false;
#pragma unroll
  for (int p = 0; p < G; ++p)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if constexpr (X3) acc[p][e] += acc2[p][e];
      bad |= !isfinite(acc[p][e]);
    }
  using In = typename C::In;
  using Out = typename Prec<P>::Store;
  Out* out = static_cast<Out*>(a.out);
  const int i0 = r0 + rt + wrow + g, j0 = c0 + wcol + 2 * q;
  if (__any_sync(0xffffffffu, bad)) {
    // Direct FMAs over this lane's outputs, operands rounded as the MMAs' were: NaN/inf reach
    // only their own windows. Rare (non-finite data or overflow), so kept simple.
    const In* img = static_cast<const In*>(a.in);
    const Acc* kd = static_cast<const Acc*>(a.kd);
#pragma unroll 1
    for (int o = 0; o < 4 * G; ++o) {
      const int p = o >> 2, e = o & 3;
      const int i = i0 + 8 * (e >> 1), j = j0 + 8 * p + (e & 1);
      if (i >= a.oh || j >= a.ow) continue;
      Acc s = 0;
      for (int u = 0; u < a.kh; ++u) {
        const In* row = img + static_cast<long long>(i + u) * a.in_ld + j;
        for (int v = 0; v < a.kw; ++v)
          s = fma_rn(static_cast<Acc>(Prec<P>::load(row[v])), kd[u * a.kw + v], s);
      }
      out[static_cast<long long>(i) * a.out_ld + j] = store_out<Out>(s);
    }
    continue;
  }
  if constexpr (kRingOut<P, Gm>) {
    if (a.ring_out) {  // the 16 rows through this warp's part of the ring, a store per row
      using B = SoBuf<Out, G>;
      Out* wb = reinterpret_cast<Out*>(smem_raw) + static_cast<std::size_t>(warp) * 16 * B::LD;
      const int jl = c0 + wcol + B::V * lane;
#pragma unroll
      for (int p = 0; p < G; ++p)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          store_pair(wb + (g + 8 * h) * B::LD + 8 * p + 2 * q, store_out<Out>(acc[p][2 * h]),
                     store_out<Out>(acc[p][2 * h + 1]));
      __syncwarp();
      store_rows<16, G>(a, out, wb, r0 + rt + wrow, jl, lane);
      continue;
    }
  }
  if constexpr (kStagedOut<P, Gm>) {
    // Rows g (h = 0), then g + 8, through this warp's buffer: a store per row of 8 G outputs.
    using B = SoBuf<Out, G>;
    Out* wb = reinterpret_cast<Out*>(smem_raw + a.so_off) + static_cast<std::size_t>(warp) * 8 * B::LD;
    const int jl = c0 + wcol + B::V * lane;  // this lane's first column of a row
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      __syncwarp();  // the previous rows are out of the buffer
#pragma unroll
      for (int p = 0; p < G; ++p)
        store_pair(wb + g * B::LD + 8 * p + 2 * q, store_out<Out>(acc[p][2 * h]),
                   store_out<Out>(acc[p][2 * h + 1]));
      __syncwarp();
      store_rows<8, G>(a, out, wb, r0 + rt + wrow + 8 * h, jl, lane);
    }
  } else {
#pragma unroll
    for (int p = 0; p < G; ++p)
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // rows g, g + 8: outputs (j, j + 1) in acc[p][2h], [2h + 1]
        const int i = i0 + 8 * h, j = j0 + 8 * p;
        if (i >= a.oh || j >= a.ow) continue;
        Out* o = out + static_cast<long long>(i) * a.out_ld + j;
        const Out v0 = store_out<Out>(acc[p][2 * h]), v1 = store_out<Out>(acc[p][2 * h + 1]);
        if (a.pair_ok && j + 1 < a.ow) {
          store_pair(o, v0, v1);
        } else {
          o[0] = v0;
          if (j + 1 < a.ow) o[1] = v1;
        }
      }
  }
  }
}

// ---- host side, shared by the plan and benchmarks/harness/toeplitz_tune.cu ---------------------------
constexpr std::size_t kSmemBudget = 96 * 1024;  // per CTA: two CTAs per SM
constexpr std::size_t kSmemBudget3 = 72 * 1024;  // three (Geom MINB = 3)
constexpr std::size_t kBandSmem = 8 * 1024;      // Geom BS: larger band tables stay in global

template <class T> std::uint16_t bits16(T h) {
  std::uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}

// A kernel tap rounded as the device rounds the image operands.
template <Precision P> typename Cfg<P>::Acc tap_value(double x) {
  if constexpr (P == Precision::fp16 || P == Precision::fp16fp32)
    return __half2float(__double2half(x));
  else if constexpr (P == Precision::bf16) return round_to_bf16(static_cast<float>(x));
  else if constexpr (P == Precision::tf32) return round_to_tf32(static_cast<float>(x));
  else if constexpr (P == Precision::fp32) return static_cast<float>(x);
  else return x;
}

// What a plan prepares once per kernel: the band table, the fallback taps, and the geometry of
// the column blocks and of the shared-memory ring.
template <Precision P, class Gm> struct Setup {
  std::vector<typename CfgOf<P, Gm>::Coef> band;  // kh rows of lp
  std::vector<typename CfgOf<P, Gm>::Acc> kd;     // kh x kw
  int db = 1, nblk = 1, lp = 0, ld = 0, S = 1, R = 0;
  bool carry = false;  // the ring also holds the next row block's new rows (CTAs walk rows)
  std::size_t smem = 0;
  int so_off = 0;  // Geom SO: the warps' output buffers after the ring
  int band_off = -1;  // Geom BS: the band table after the ring (-1: read from global memory)
};

template <Precision P, class Gm>
Setup<P, Gm> prepare(const double* kernel, int kh, int kw, std::size_t budget = kSmemBudget) {
  using C = CfgOf<P, Gm>;
  using S = typename C::S;
  if (Gm::MINB >= 3) budget = std::min(budget, kSmemBudget3);
  constexpr std::size_t so_bytes =
      kStagedOut<P, Gm> ? SoBuf<typename Prec<P>::Store, Gm::G>::bytes : 0;
  budget -= so_bytes;
  Setup<P, Gm> st;
  const int nd = (kw + 7 + C::KK - 1) / C::KK;  // band chunks a group of 8 outputs meets
  st.db = nd <= 4 ? nd : nd <= 6 ? 6 : 8;
  st.nblk = (nd + st.db - 1) / st.db;
  st.lp = C::KK * st.db * st.nblk + 8;
  const std::size_t band_bytes =
      Gm::BS ? sizeof(typename C::Coef) * static_cast<std::size_t>(kh) * st.lp : 0;
  const bool band_smem = band_bytes > 0 && band_bytes <= kBandSmem;
  if (band_smem) budget -= band_bytes + 16;
  // Entry i of row u is tap i - 8 (16-bit operands: the pair (i - 8, i - 7)).
  st.band.resize(static_cast<std::size_t>(kh) * st.lp);
  st.kd.resize(static_cast<std::size_t>(kh) * kw);
  for (int u = 0; u < kh; ++u) {
    auto tap = [&](int t) {
      return t >= 0 && t < kw ? kernel[static_cast<std::size_t>(u) * kw + t] : 0.0;
    };
    for (int v = 0; v < kw; ++v) st.kd[static_cast<std::size_t>(u) * kw + v] = tap_value<P>(tap(v));
    for (int i = 0; i < st.lp; ++i) {
      auto& b = st.band[static_cast<std::size_t>(u) * st.lp + i];
      const double t0 = tap(i - 8), t1 = tap(i - 7);
      if constexpr (C::acc == AccKind::f32x3) {
        const float x = static_cast<float>(t0), h = round_to_tf32(x);
        b = make_float2(h, round_to_tf32(x - h));
      } else if constexpr (C::KK == 16) {
        std::uint16_t lo, hi;
        if constexpr (P == Precision::bf16) {
          lo = bits16(__float2bfloat16_rn(static_cast<float>(t0)));
          hi = bits16(__float2bfloat16_rn(static_cast<float>(t1)));
        } else {
          lo = bits16(__double2half(t0));
          hi = bits16(__double2half(t1));
        }
        b = lo | static_cast<std::uint32_t>(hi) << 16;
      } else {
        b = tap_value<P>(t0);
      }
    }
  }
  // Shared memory: a ring of TH + 2S - 1 image rows (S kernel rows per step).
  const int cw = Gm::TW - 8 + C::KK * st.db;
  if (sizeof(S) == 2) {
    st.ld = (cw + 7) / 8 * 8;
    if ((st.ld / 8) % 2 == 0) st.ld += 8;  // odd 16-byte units: ldmatrix rows on distinct banks
  } else if (Gm::PERM && C::KK == 8) {
    st.ld = (cw + 7) / 8 * 8;
    if ((st.ld / 8) % 2 == 0) st.ld += 8;  // pair loads: rows g, g + 1.. on distinct banks
  } else {
    st.ld = (cw + 3) / 4 * 4;
    if ((st.ld / 4) % 2 == 0) st.ld += 4;  // scalar fragment loads: rows g on distinct banks
  }
  const long long rows_fit = static_cast<long long>(budget / (sizeof(S) * C::kRings * st.ld));
  st.S = static_cast<int>(std::max<long long>(1, (rows_fit - Gm::TH + 1) / 2));
  if (st.S >= kh) {
    st.S = kh;
    st.R = Gm::TH + kh - 1;
    // One step per row block: with TH more rows the next block's are copied during this one.
    if (st.nblk == 1 && 2 * Gm::TH + kh - 1 <= rows_fit) {
      st.carry = true;
      st.R = 2 * Gm::TH + kh - 1;
    }
  } else {
    st.R = Gm::TH + 2 * st.S - 1;
  }
  st.smem = sizeof(S) * C::kRings * static_cast<std::size_t>(st.R) * st.ld;
  if (so_bytes) {
    st.so_off = static_cast<int>((st.smem + 15) / 16 * 16);
    st.smem = st.so_off + so_bytes;
  }
  if (band_smem) {
    st.band_off = static_cast<int>((st.smem + 15) / 16 * 16);
    st.smem = st.band_off + band_bytes;
  }
  return st;
}

// Launch with a.nph chosen here: when the ring carries rows (st.carry), a CTA walks up to 8
// row blocks down its strip, the count that fills the GPU's CTA slots in the fewest rounds.
template <Precision P, class Gm, int DB>
void launch_db(Args a, bool carry, std::size_t smem, cudaStream_t stream) {
  auto kern = toeplitz_kernel<P, Gm, DB>;
  raise_dynamic_smem(kern, smem);
  const long long nrb = (a.oh + Gm::TH - 1) / Gm::TH;
  a.nph = 1;
  a.carry = false;
  if (carry) {
    int dev = 0, sms = 0, per_sm = 0;
    TC_CUDA_CHECK(cudaGetDevice(&dev));
    TC_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    TC_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, kWarps * 32, smem));
    const long long slots = std::max(1, sms * per_sm);
    long long best = -1;
    for (int nph = 1; nph <= 8; ++nph) {
      const long long ctas = a.ncb * ((nrb + nph - 1) / nph);
      const long long cost = (ctas + slots - 1) / slots * nph;
      if (best < 0 || cost <= best) {
        best = cost;
        a.nph = nph;
      }
    }
    a.carry = a.nph > 1;
  }
  a.ring_out = false;
  if constexpr (kRingOut<P, Gm>) {
    // Only where output rows are not all 16-byte aligned: tf32 GeoMid, H100, 4096^2 (toeplitz_tune
    // --round16), kernel ms with RO / without at k = 15 and 19 (rows 8 bytes off 16): 0.101 / 0.103
    // and 0.128 / 0.137; at k = 13 (rows 16-byte aligned, not 32) 0.097 / 0.090, at k = 17 and
    // 25 (32-byte aligned) 0.111 / 0.099 and 0.156 / 0.151, at k = 9 equal.
    using Out = typename Prec<P>::Store;
    using B = SoBuf<Out, Gm::G>;
    const bool rows16 = reinterpret_cast<std::uintptr_t>(a.out) % 16 == 0 &&
                        (a.out_ld * static_cast<long long>(sizeof(Out))) % 16 == 0;
    const std::size_t ring = a.band_off >= 0 ? static_cast<std::size_t>(a.band_off) : smem;
    a.ring_out = a.nph == 1 && ring >= 2 * B::bytes && !rows16;  // 16 rows per warp: SoBuf x 2
  }
  const long long nctas = a.ncb * ((nrb + a.nph - 1) / a.nph);
  if (nctas > 0x7fffffffLL) throw ValueError("toeplitz_tc: image too large for one grid");
  kern<<<dim3(static_cast<unsigned>(nctas)), kWarps * 32, smem, stream>>>(a);
  TC_CUDA_LAUNCH_CHECK();
}

// The launch-time fields of `a` from the plan's setup (image and output set by the caller).
template <Precision P, class Gm>
void fill_args(Args& a, const Setup<P, Gm>& st, const void* band, const void* kd) {
  using In = typename CfgOf<P, Gm>::In;
  using Out = typename Prec<P>::Store;
  a.band = band;
  a.lp = st.lp;
  a.kd = kd;
  a.S = st.S;
  a.R = st.R;
  a.ld = st.ld;
  a.nblk = st.nblk;
  a.so_off = st.so_off;
  a.band_off = st.band_off;
  a.ncb = (a.ow + Gm::TW - 1) / Gm::TW;
  a.vec_ok = reinterpret_cast<std::uintptr_t>(a.in) % 16 == 0 &&
             (a.in_ld * static_cast<long long>(sizeof(In))) % 16 == 0;
  a.pair_ok = reinterpret_cast<std::uintptr_t>(a.out) % (2 * sizeof(Out)) == 0 && a.out_ld % 2 == 0;
}

// Fills the launch-time fields of `a` (image and output set by the caller) and launches.
template <Precision P, class Gm>
void launch(Args a, const Setup<P, Gm>& st, const void* band, const void* kd,
            cudaStream_t stream) {
  fill_args(a, st, band, kd);
  switch (st.db) {
    case 1: return launch_db<P, Gm, 1>(a, st.carry, st.smem, stream);
    case 2: return launch_db<P, Gm, 2>(a, st.carry, st.smem, stream);
    case 3: return launch_db<P, Gm, 3>(a, st.carry, st.smem, stream);
    case 4: return launch_db<P, Gm, 4>(a, st.carry, st.smem, stream);
    case 6: return launch_db<P, Gm, 6>(a, st.carry, st.smem, stream);
    default: return launch_db<P, Gm, 8>(a, st.carry, st.smem, stream);
  }
}

}  // namespace tz
}  // namespace cuda
}  // namespace tc
