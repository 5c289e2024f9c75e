// The fused P_block kernel on mma.sync (m16n8k16, fp16 / fp16fp32 / bf16), used by
// im2tensor_fused and im2tensor_atomic when the kernel fits one block (kh, kw <= 64).
// Measured reason (benchmarks/IM2TENSOR_NOTES.md): the WMMA kernel is bound by shared memory
// (L1 97 % busy at k = 15): every P element went through shared memory twice and K̂ᵀ fragments
// were reloaded per tile. Here the accumulator layout is known, so
//   * K̂ᵀ fragments stay in registers for the whole thread block;
//   * the sum over x along a diagonal is done in registers for the 2·MT row groups a lane
//     holds (x = 8u + g: elements (u, n-tile w+u) share a diagonal), in a sliding window over
//     the n-tiles, leaving 8 partials per diagonal (one per g) to go through shared memory;
//   * diagonals that lie wholly inside the block are final pixels, written straight to R; only
//     the hB-1 diagonals a block shares with its neighbour on each side go through C (or
//     atomics), and the recombination pass visits only those columns.
// Included by im2tensor.cuh (needs its traits, Geo, Args, stage_image).
#pragma once

namespace tc {
namespace cuda {
namespace i2t {

constexpr int kMmaWarps = 4;

template <class T> struct MmaOp;
template <> struct MmaOp<TrFp16> {  // half accumulator requested, as the paper's fp16
  static constexpr int CREGS = 2;
  __device__ static void run(std::uint32_t* c, const std::uint32_t* a, const std::uint32_t* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, "
        "{%0,%1};\n"
        : "+r"(c[0]), "+r"(c[1])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  // element i of 4: rows g (i < 2) / g+8, columns 2t + (i & 1)
  __device__ static float get(const std::uint32_t* c, int i) {
    const __half2 h = *reinterpret_cast<const __half2*>(&c[i >> 1]);
    return (i & 1) ? __high2float(h) : __low2float(h);
  }
};
template <class AB> struct MmaF32 {
  static constexpr int CREGS = 4;
  __device__ static void run(std::uint32_t* c, const std::uint32_t* a, const std::uint32_t* b) {
    runf(reinterpret_cast<float*>(c), a, b);
  }
  __device__ static void runf(float* f, const std::uint32_t* a, const std::uint32_t* b) {
    if constexpr (std::is_same_v<AB, __half>) {
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
          "{%8,%9}, {%0,%1,%2,%3};\n"
          : "+f"(f[0]), "+f"(f[1]), "+f"(f[2]), "+f"(f[3])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    } else {
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
          "{%8,%9}, {%0,%1,%2,%3};\n"
          : "+f"(f[0]), "+f"(f[1]), "+f"(f[2]), "+f"(f[3])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
  }
  __device__ static float get(const std::uint32_t* c, int i) {
    return reinterpret_cast<const float*>(c)[i];
  }
};
template <> struct MmaOp<TrFp16Fp32> : MmaF32<__half> {};
template <> struct MmaOp<TrBf16> : MmaF32<__nv_bfloat16> {};

template <class T> constexpr bool kHasMma = std::is_same_v<T, TrFp16> ||
                                            std::is_same_v<T, TrFp16Fp32> ||
                                            std::is_same_v<T, TrBf16>;

__device__ __forceinline__ void ldmatrix_x4(std::uint32_t* r, const void* p) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
}
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t* r, const void* p) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
}

// Per-warp diagonal buffer, transposed: row D (local diagonal) holds its 8 partials (one per
// groupID g) contiguously, so the reduction reads them as two 16-byte loads with no bounds
// checks. Slot of (D, g) = g ^ ((D >> 2) & 1): with it the lanes' 4-byte stores of one emit hit
// 32 distinct banks (checked exhaustively), and reading half (lane >> 2) & 1 first keeps each
// quarter-warp's 16-byte loads on distinct banks.
// The buffer is a ring of 64 rows (row D & 63): emit k writes D = 8k .. 8k+14, so block b
// (D = 32b .. 32b+31) is complete after emit 4b + 3 and is reduced then, before emit 4b + 7
// first writes the rows it shares with D + 64. 2 KB per warp instead of a whole slice (5-6 KB):
// the slice buffer was what bounded the CTAs per SM at small k, and the reductions now
// interleave with the MMAs. Slots no emit writes (the first 7 and the last 7 diagonals) are
// zeroed before the emit that writes the rest of their rows.
constexpr int kMmaRing = 64;
constexpr int kMmaNT = 16;  // n-tiles per block: Wc = 128, the best width measured for every k

struct MmaSmem {
  std::size_t a, s, buf, total;
  __host__ __device__ explicit MmaSmem(const Geo& g) {
    const int rw = g.rw > 1 ? g.rw : 1;
    std::size_t o = 0;
    a = o;
    o = align_up(o + 2 * static_cast<std::size_t>(rw) * g.hB * g.ldA, 128);
    s = o;
    o = align_up(o + 2 * static_cast<std::size_t>(g.rowsS) * g.ldS, 128);
    buf = o;
    o += sizeof(float) * kMmaWarps * rw * 8 * kMmaRing;
    total = o;
  }
};

// Blocks per SM the register allocation must allow: the largest tiles (MT·KC >= 12) would take
// 135-145 registers and 3 CTAs; capped at 128 they fit 4 (shared memory allows it since the ring).
__host__ __device__ constexpr int mma_min_blocks(int mt, int kc) { return mt * kc >= 12 ? 4 : 1; }

// MT: 16-row groups of x (hB = 16·MT); KC: 16-row chunks of y (ĥK = 16·KC); the block is
// kMmaNT n-tiles wide, a compile-time count so the n-tile loop unrolls and the diagonal window's
// shifts become register renames.
//
// The window w[mt][4] is laid out like the accumulator fragment of x-tile mt: w[mt][0..1] are
// row group u = 2mt (rows g, columns 2t+e), w[mt][2..3] row group u = 2mt+1 (rows g+8). Slot u
// of n-tile n holds this lane's running sum of the diagonal through (x = 8u + g, c = 8n + 2t + e);
// moving to n-tile n+1 that diagonal continues at row group u+1, so the shift is u -> u+1, the
// last row group leaves the window (emit) and row group 0 starts from zero.
// CHAIN (fp32 accumulators only): the window itself is the MMAs' C operand, so the tensor core
// adds the products to the running sums: no zeroing, no per-element adds, but one dependency
// chain through the n-tiles. Otherwise each tile is computed from zero and added to the float
// window (always for fp16: its half accumulator would sum the diagonal in half precision).
// RW = 2: a warp computes rows r and r+1 from the same B fragments. Ŝ_{r+1} is Ŝ_r shifted up by
// one row (eq. 3), so K̂ᵀŜ_{r+1} = K̂ᵀ₁Ŝ_r with K̂ᵀ₁[x][y] = K̂ᵀ[x][y-1], which needs kh < ĥK
// (the zero pad row takes the shift): the same P slices, half the B loads per output.
template <class T, Epi E, int MT, int KC, bool CHAIN, int RW>
__global__ void __launch_bounds__(kMmaWarps * 32, mma_min_blocks(MT, KC))
    pblock_mma_kernel(Args a) {
  static_assert(kHasMma<T>, "mma.sync path: fp16, fp16fp32, bf16");
  using S = typename T::Stage;
  using Op = MmaOp<T>;
  static_assert(!CHAIN || Op::CREGS == 4, "the window is the C operand only for fp32 accumulators");
  constexpr int NT = kMmaNT, RING = kMmaRing, NDIAG = 16 * MT + 8 * NT - 1;
  constexpr int KE = NT + 2 * MT - 1;     // emits per row; NDIAG = 8·KE + 7
  constexpr int NB = (NDIAG + 31) / 32;   // blocks of 32 diagonals
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const Geo& g = a.g;
  const MmaSmem lay(g);
  const int jb = blockIdx.x, rb = blockIdx.y, ib = blockIdx.z;
  const int c0 = jb * g.Wc, r0 = rb * g.dB, x0 = ib * g.hB;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int gq = lane >> 2, tq = lane & 3;  // mma "groupID" and "threadID_in_group"
  S* sA = reinterpret_cast<S*>(smem_raw + lay.a);
  S* sS = reinterpret_cast<S*>(smem_raw + lay.s);
  float* buf = reinterpret_cast<float*>(smem_raw + lay.buf) + warp * RW * 8 * RING;

  {
    const S* src = static_cast<const S*>(a.kt) + static_cast<std::size_t>(x0) * g.hKp;
    for (int e = threadIdx.x; e < g.hB * g.hKp; e += blockDim.x) {
      const int x = e / g.hKp, y = e % g.hKp;
      sA[x * g.ldA + y] = src[e];
      if constexpr (RW == 2) sA[(g.hB + x) * g.ldA + y] = y ? src[e - 1] : zero_of<S>();
    }
  }
  stage_image<T>(static_cast<const typename T::In*>(a.in), a.in_ld, g.ih, g.iw, r0, g.rowsS, c0,
                 g.Wc, sS, g.ldS, a.vec_ok);
  __syncthreads();

  // K̂ᵀ (and K̂ᵀ₁) fragments for the whole block, in registers.
  std::uint32_t af[RW][MT][KC][4];
  {
    const int lm = lane >> 3, lr = lane & 7;
#pragma unroll
    for (int q = 0; q < RW; ++q)
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int kc = 0; kc < KC; ++kc)
          ldmatrix_x4(af[q][mt][kc], sA + (q * g.hB + mt * 16 + (lm & 1) * 8 + lr) * g.ldA +
                                         kc * 16 + (lm >> 1) * 8);
  }
  // ldmatrix.trans row address of this lane within a 16(y) x 16(c) tile of S
  const int b_row = ((lane >> 3) & 1) * 8 + (lane & 7), b_col = (lane >> 4) * 8;
  // Emit k writes this lane's two partials to diagonals D = 8k + base + e, ring row D & 63 =
  // 8·(k & 7) + base + e, except that for k & 7 == 7 the row wraps (st0w / st1w).
  const int base = 7 + 2 * tq - gq;
  const int sw0 = gq ^ ((base >> 2) & 1), sw1 = gq ^ (((base + 1) >> 2) & 1);
  float* const st0 = buf + base * 8 + sw0;
  float* const st1 = buf + (base + 1) * 8 + sw1;
  float* const st0w = buf + ((56 + base) & 63) * 8 + sw0;
  float* const st1w = buf + ((57 + base) & 63) * 8 + sw1;
  const int half = (lane >> 2) & 1;
  const int jofs = c0 - x0 - (g.hB - 1);  // output column of local diagonal D: jofs + D

  for (int rr = warp * RW; rr < g.dB; rr += kMmaWarps * RW) {
    const int r = r0 + rr;
    if (r >= g.hR) break;  // warp-uniform

    // Reduce block b: 8 partials per diagonal, pixel or edge partial out.
    auto reduce = [&](const int b) {
      __syncwarp();
      const int D = 32 * b + lane;
#pragma unroll
      for (int q = 0; q < RW; ++q) {
        if (r + q >= g.hR || D >= NDIAG) continue;
        const float4* row = reinterpret_cast<const float4*>(buf + q * 8 * RING + 8 * (D & 63));
        const float4 u = row[half], v = row[half ^ 1];
        // The sum is symmetric in the halves and in the swizzled pairs: the same bits per D.
        const float s = ((u.x + u.y) + (u.z + u.w)) + ((v.x + v.y) + (v.z + v.w));
        const int j = jofs + D;
        if (j >= 0 && j < g.wR) {
          using Out = typename T::Out;
          Out* R = static_cast<Out*>(a.out) + static_cast<std::size_t>(r + q) * a.out_ld + j;
          if (D >= g.hB - 1 && D < g.Wc) {
            // Every x of this diagonal lies in this block (nI = 1 here): the pixel is final.
            *R = narrow<Out>(s);
          } else if constexpr (E == Epi::partial_c) {
            float* C = static_cast<float*>(a.ws);
            C[(static_cast<std::size_t>(r + q) * g.NC + (ib + jb) % g.NC) * g.wR + j] = s;
          } else {
            atomicAdd(R, narrow<Out>(s));
          }
        }
      }
      __syncwarp();
    };
    // Zero ring rows first..first+6 (whole rows: the emit after this writes the rest).
    auto zero7 = [&](const int first) {
      if (lane < 14) {
#pragma unroll
        for (int q = 0; q < RW; ++q)
          reinterpret_cast<float4*>(buf + q * 8 * RING + 8 * ((first + (lane >> 1)) & 63))[lane & 1] =
              make_float4(0.f, 0.f, 0.f, 0.f);
      }
      __syncwarp();
    };

    float w[RW][MT][4];
#pragma unroll
    for (int q = 0; q < RW; ++q)
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) w[q][mt][0] = w[q][mt][1] = w[q][mt][2] = w[q][mt][3] = 0.f;
    zero7(0);  // diagonals 0..6: only emit 0 writes them, partly
    int k_emit = 0;
    auto emit = [&]() {
      if (k_emit == KE - 1) zero7(8 * KE);  // diagonals 8·KE ..: only the last emit writes them
#pragma unroll
      for (int q = 0; q < RW; ++q) {
        if ((k_emit & 7) == 7) {
          st0w[q * 8 * RING] = w[q][MT - 1][2];
          st1w[q * 8 * RING] = w[q][MT - 1][3];
        } else {
          st0[q * 8 * RING + 64 * (k_emit & 7)] = w[q][MT - 1][2];
          st1[q * 8 * RING + 64 * (k_emit & 7)] = w[q][MT - 1][3];
        }
#pragma unroll
        for (int mt = MT - 1; mt >= 0; --mt) {
          w[q][mt][2] = w[q][mt][0];
          w[q][mt][3] = w[q][mt][1];
          w[q][mt][0] = mt > 0 ? w[q][mt > 0 ? mt - 1 : 0][2] : 0.f;
          w[q][mt][1] = mt > 0 ? w[q][mt > 0 ? mt - 1 : 0][3] : 0.f;
        }
      }
      if ((k_emit & 3) == 3 && k_emit < KE - 1) reduce(k_emit >> 2);
      ++k_emit;
    };
#pragma unroll
    for (int nt2 = 0; nt2 < NT / 2; ++nt2) {
      std::uint32_t b[KC][4];
#pragma unroll
      for (int kc = 0; kc < KC; ++kc)
        ldmatrix_x4_trans(b[kc], sS + (rr + kc * 16 + b_row) * g.ldS + nt2 * 16 + b_col);
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        if constexpr (CHAIN) {
#pragma unroll
          for (int kc = 0; kc < KC; ++kc)
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
              for (int q = 0; q < RW; ++q) Op::runf(w[q][mt], af[q][mt][kc], b[kc] + 2 * j);
        } else {
          std::uint32_t acc[RW][MT][Op::CREGS];
#pragma unroll
          for (int q = 0; q < RW; ++q)
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
              for (int c = 0; c < Op::CREGS; ++c) acc[q][mt][c] = 0u;  // 0.0f and half2(0, 0)
#pragma unroll
          for (int kc = 0; kc < KC; ++kc)
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
              for (int q = 0; q < RW; ++q) Op::run(acc[q][mt], af[q][mt][kc], b[kc] + 2 * j);
#pragma unroll
          for (int q = 0; q < RW; ++q)
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
              for (int i = 0; i < 4; ++i) w[q][mt][i] += Op::get(acc[q][mt], i);
        }
        emit();
      }
    }
#pragma unroll
    for (int f = 1; f < 2 * MT; ++f) emit();
    // Blocks completed only by the last emit(s).
#pragma unroll
    for (int b = 0; b < NB; ++b)
      if (4 * b + 3 >= KE - 1) reduce(b);
  }
}

}  // namespace i2t
}  // namespace cuda
}  // namespace tc
