// separable's shared declarations (csrc/cuda/methods/separable/: one file per pass, the plan in plan.cu):
// the two-pass layout, the fused passes' geometry, launch parameters and shared-memory sizes,
// and the getters of the fused kernels (fused_pass.cu, fused_ws_pass.cu) the plan launches.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "cuda/runtime/band_mma.cuh"
#include "cuda/runtime/common.cuh"
#include "cuda/runtime/precision.cuh"
#include "cuda/runtime/nonfinite.cuh"

namespace tc {
namespace cuda {
namespace sep {

constexpr int BX = 32, BY = 8, CT = 64;  // threads; taps per shared-memory chunk
constexpr int PITCH_T = BX + 1;          // transposed tiles: odd pitch, conflict-free both ways

template <Precision P>
constexpr int rows_per_thread() { return P == Precision::fp64 ? 8 : 16; }

// One result of term q: added to the running sum of the earlier terms (unless FIRST), written
// in the storage type to `out` (LAST) or back to the running sum.
// A non-finite final result flags the plan's NonfiniteRepair (the r terms' zero factors meet
// inf: 0 x inf = NaN, and +inf / -inf terms cancel into NaN where scipy has inf).
template <Precision P, bool FIRST, bool LAST>
__device__ __forceinline__ void emit(typename Prec<P>::Elem v, typename Prec<P>::Elem* sum,
                                     typename Prec<P>::Store* out, int* nf) {
  if (!FIRST) v = Prec<P>::add_elem(v, *sum);
  if (LAST) {
    __stcs(out, Prec<P>::store(v));  // streamed: not read again here
    mark_nonfinite(nf, v);
  } else {
    *sum = v;
  }
}
// The two-pass form sums fp32 taps in blocks of R (sliding.cuh), then the blocks: H100, 4096^2,
// rank-1 fp32 kernels of 65 / 97 / 161 taps 0.387 / 0.456 / 0.671 ms against one running sum's
// 0.331 / 0.385 / 0.560 (16 more registers per thread), and an fp32 Gaussian of sigma 20 (161
// taps) at MAPE 4.5e-6 % against 1.3e-5 % (fp32's goal: 1e-5 %). Other precisions: one running
// sum (fp64 needs no blocks; the others' operand rounding dominates their error).
template <Precision P> constexpr int kSumBlock = P == Precision::fp32 ? rows_per_thread<P>() : 0;

// ---- fused pass (scalar precisions, kh and kw <= 64) -----------------------------------------
// One block walks down a strip of FW = 64 columns over SEG output rows. Row-filtered rows T live
// only in shared memory (FOH + kh - 1 of them); each step filters FG new image rows, column-
// filters FOH output rows, and shifts the kh - 1 rows the next step still needs. Input is read
// once (plus the apron), output written once: no T round trip through HBM, no second launch.
// What makes it fast (ncu on the H100 guided each; the FMAs are ~55 % of the instructions):
//  - taps unrolled at compile time (NC chunks of 8): each coefficient is an operand from the
//    kernel's parameter bank, not a load; only the chunk that passes the kernel edge is guarded;
//  - FR = 16 outputs per thread, so a shared load feeds 16 FMAs (the row pass loads 16 bytes);
//  - image rows arrive by 16-byte cp.async while the block runs its column pass; rows are
//    row-major with a pitch of an odd number of 16-byte units, so the row pass's lanes (one image
//    row each) read 16 bytes per lane without bank conflicts. Unaligned inputs (row stride or
//    pointer not 16-byte aligned) are staged with plain loads instead.
constexpr int FW = 2 * BX, FR = 16, FG = 64, FOH = 4 * FR, FMAX = 64, FCH = 8;
static_assert(BX * BY == 256 && FG == 2 * BX && FOH == FG && BY == 8, "fused pass thread layout");
static_assert(FG == 4 * 16 && FW == 2 * 8 * kBandGroups && FOH == 2 * 8 * kBandGroups,
              "tensor-core passes: 8 warps = 4 x 16 lines x 2 x 32 outputs");

// The tensor-core forms of the passes (band_mma.cuh), per precision: Row / Col name the MMA of
// the row / column pass (void: FFMAs). tf32: both on tf32 MMAs (fused_pass). fp32: the column
// pass on fp64 MMAs beside an FFMA row pass, in the warp-specialized fused_ws_pass (sm_90), so
// that the FMA and tensor pipes work at once (fp64 MMAs in both passes, or both passes in the
// same warps, measured slower: benchmark notes).
template <Precision P>
struct FusedMma {
  using Row = void;
  using Col = void;
};
template <>
struct FusedMma<Precision::tf32> {
  using Row = BandTf32;
  using Col = BandTf32;
};
template <>
struct FusedMma<Precision::fp32> {
  using Row = void;
  using Col = BandF64;
};
template <class M>
constexpr bool kMma = !std::is_void<M>::value;
template <class M>
constexpr std::size_t bfrag_bytes() {
  if constexpr (kMma<M>) return sizeof(typename M::BFrag);
  else return 0;
}
// T row pitch: FW + 4 keeps the row pass's 16-byte stores conflict-free; the tensor-core column
// pass reads 4 rows x 8 columns per load, conflict-free when the pitch is 8 (mod 32) words.
template <bool TC>
constexpr int kPitchT = TC ? FW + 8 : FW + 4;

template <class S>
constexpr int kVec = 16 / static_cast<int>(sizeof(S));  // elements per 16-byte copy

// Band chunks of a tensor-core pass over `taps` taps (band_mma.cuh): ceil((taps + 7) / 8).
__host__ __device__ inline int band_chunks(int taps) { return (taps + 14) / 8; }

// Input tile pitch in elements: room for the window's last 16-byte load (and, with nd > 0, for
// the last chunk of a tensor-core row pass with nd band chunks), odd in 16-byte units
// (conflict-free 16-byte row reads; also conflict-free for the row pass's 8 x 4 fragment loads).
template <class S>
__host__ __device__ inline int fused_in_pitch(int kw, int nd) {
  int need = FW + kw - 1 + kVec<S>;
  if (nd > 0 && 8 * nd + 56 > need) need = 8 * nd + 56;
  const int units = (need + kVec<S> - 1) / kVec<S>;
  return (units | 1) * kVec<S>;
}

// T rows in shared memory: FOH + kh - 1, and up to the last chunk a tensor-core column pass with
// nd band chunks reads.
__host__ __device__ inline int fused_t_rows(int kh, int nd) {
  const int rows = FOH + kh - 1;
  return nd > 0 && 8 * nd + 56 > rows ? 8 * nd + 56 : rows;
}

template <class E>
struct FusedCoef {  // passed by value: lives in the kernel's constant parameter bank
  E a[FMAX];
  E b[FMAX];
};

// The fused kernels' other launch parameters (one term of the sum over r).
template <Precision P>
struct FusedArgs {
  const typename Prec<P>::Store* in;
  std::int64_t in_stride;
  int ih, iw, oh, ow, seg;  // seg: output rows per block
  typename Prec<P>::Elem* sum;  // running sum of the earlier terms
  std::int64_t sum_stride;
  typename Prec<P>::Store* out;
  std::int64_t out_stride;
  int kh, kw;
  bool first, last, async;  // first / last term; rows 16-byte aligned (cp.async staging)
  int* nf;                  // NonfiniteRepair's flag (emit marks non-finite final results)
};

// nd: band chunks of the tensor-core passes (RM / CM: row / column pass MMA, void for FFMAs).
template <Precision P, class RM, class CM>
std::size_t fused_smem(int kh, int kw, int nd) {
  using S = typename Prec<P>::Store;
  return FG * fused_in_pitch<S>(kw, kMma<RM> ? nd : 0) * sizeof(S) +
         fused_t_rows(kh, kMma<CM> ? nd : 0) * kPitchT<kMma<CM>> * sizeof(typename Prec<P>::Elem) +
         nd * 32 * (bfrag_bytes<RM>() + bfrag_bytes<CM>());
}

// ---- warp-specialized fused pass (fused_ws_pass.cu): its layout, which the plan sizes ---------
namespace ws {
constexpr int kWarpsY = 12, kThreads = BX * kWarpsY, kProducers = BX * 8;
constexpr int kDepth = 3;  // steps the row pass may run ahead of the column pass
constexpr int kFull = 1, kEmpty = kFull + kDepth, kStage = kEmpty + kDepth;  // barrier ids
constexpr int kGroups = FOH / 8;  // output groups of 8 rows per column-pass warp: the whole step
// Ring of T rows: a step's window as the column pass's chunks address it (fused_t_rows <= 128
// for kh <= 64) plus the FG rows of each step the row pass may be ahead (<= 256), rounded up to
// 256 so that a step's base row takes 4 values (compile-time chunk offsets, wrap by a mask).
constexpr int kRingRows = 256;
static_assert(FOH == 64 && kRingRows % FOH == 0 && 128 + (kDepth - 1) * FG <= kRingRows,
              "ws ring: steps of 64 rows, every window and the rows written ahead fit");
}  // namespace ws

template <Precision P, class CM>
std::size_t fused_ws_smem(int kw, int nd) {
  using S = typename Prec<P>::Store;
  return FG * fused_in_pitch<S>(kw, 0) * sizeof(S) +
         ws::kRingRows * kPitchT<true> * sizeof(typename Prec<P>::Elem) +
         nd * 32 * bfrag_bytes<CM>();
}

// The fused kernel's pointer type; half2 fp16 has no fused pass (and must not name one).
template <Precision P, bool = (Prec<P>::W == 1)>
struct FusedPtr {
  using type = void*;
};
template <Precision P>
struct FusedPtr<P, true> {
  using type = void (*)(FusedArgs<P>, FusedCoef<typename Prec<P>::Elem>);  // every fused kernel
};

// The fused kernel for NC = ceil(max(kh, kw) / 8) chunks of taps, picked at run time
// (fused_pass.cu; instantiated for the scalar precisions' FFMA passes and tf32's tensor-core
// ones). su: stage_group's unrolled copies (see SeparablePlan::setup_fused).
template <Precision P, class RM, class CM>
typename FusedPtr<P>::type fused_kernel(int nc, bool su);
// The warp-specialized kernel for nc chunks (fused_ws_pass.cu; fp32 with BandF64).
template <Precision P, class CM>
typename FusedPtr<P>::type fused_ws_kernel(int nc);

}  // namespace sep
}  // namespace cuda
}  // namespace tc
