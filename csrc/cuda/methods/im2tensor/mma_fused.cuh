// The fused P_block kernel on mma.sync (m16n8k16, fp16 / fp16fp32 / bf16), used by
// im2tensor_fused and im2tensor_atomic when the kernel fits one block (kh, kw <= 64).
// Included by im2tensor.cuh (needs its traits, Geo, Args).
//
// Orientation (docs/design/im2tensor.md): P = K̂ᵀŜ is computed transposed,
// Pᵀ = Ŝᵀ K̂, with image columns c along the MMA's m and kernel columns x along its n. What
// bounds this kernel is the sum along each diagonal j = c - x across lanes: an accumulator
// element (m, n) sits in lane (g = m mod 8, t = n/2 mod 4). With x along m (rounds 1-2) every
// lane group g holds different x, so each diagonal had 8 partials to exchange through shared
// memory whatever the kernel size. Here both index maps are chosen so a lane's elements share
// diagonals as much as possible:
//   * lane group g owns the 16 contiguous image columns c = 16g + q of the 128-column block:
//     m-tile i, row m maps to c = 16(m mod 8) + 2i + m/8, which the ldmatrix.trans of the A
//     operand reads from a staged row permuted as position 8q + g <-> column 16g + q;
//   * lane t owns the W = 2·NJ contiguous x = W·t + 2j + e (n-tile j, column n = 2t + e) of the
//     K̂ B fragments, which stay in registers.
// Then accumulator element (m, n) of MMA (i, j) lies on diagonal 16g - W·t + 2(i - j) + (m/8 - e):
// every MMA with the same i - j adds to the same diagonals, so one accumulator set per i - j is
// the MMAs' C operand (fp32 accumulators: no per-element adds, 7 + NJ independent chains). A
// lane ends the row with 16 + W - 1 consecutive diagonal partials; the first W - 1 belong to the
// neighbouring lane group (one shuffle each), leaving each diagonal with exactly 4 partials,
// one per t, that meet in a per-warp shared buffer (16 bytes written and read per output).
// Rounds 1-2 moved 8 partials per diagonal (64 B) and padded x to 16.
// Diagonals wholly inside the CTA are final pixels written straight to R; the kw - 1 at each
// end of its columns are partial, through C (fused) or atomics (atomic).
#pragma once

namespace tc {
namespace cuda {
namespace i2t {

constexpr int kMmaWarps = 8;
constexpr int kMmaWc = 128;  // columns of one pass of a warp: 16 per lane group
// A CTA walks nh such column blocks ("passes") left to right per row; the partial sums of the
// diagonals crossing from one into the next stay in registers, so only the CTA's outer edges
// go through C / atomics. Staged row: nh·128 + 8 elements (an odd multiple of 16 bytes, so
// ldmatrix's 8 row addresses hit distinct banks).
__host__ __device__ constexpr int mma_lds(int nh) { return kMmaWc * nh + 8; }

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
};
template <> struct MmaOp<TrFp16Fp32> : MmaF32<__half> {};
template <> struct MmaOp<TrBf16> : MmaF32<__nv_bfloat16> {};

template <class T> constexpr bool kHasMma = std::is_same_v<T, TrFp16> ||
                                            std::is_same_v<T, TrFp16Fp32> ||
                                            std::is_same_v<T, TrBf16>;

__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t* r, const void* p) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
}
__device__ __forceinline__ std::uint32_t movmatrix_trans(std::uint32_t v) {
  std::uint32_t d;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(d) : "r"(v));
  return d;
}

// Two neighbouring image elements (gc, gc+1) of row gr as a packed Stage pair, zero outside.
template <class T>
__device__ __forceinline__ std::uint32_t load_pair(const typename T::In* img, long long ld,
                                                   int ih, int iw, int gr, int gc, bool vec_ok) {
  using In = typename T::In;
  using S = typename T::Stage;
  In v0 = In(0), v1 = In(0);
  if (gr < ih) {
    const In* p = img + static_cast<std::size_t>(gr) * ld + gc;
    if (vec_ok && gc + 1 < iw) {
      if constexpr (sizeof(In) == 2) {
        const std::uint32_t w = *reinterpret_cast<const std::uint32_t*>(p);
        return w;  // already the Stage pair (fp16 staged as stored)
      } else {
        const float2 f = *reinterpret_cast<const float2*>(p);
        v0 = f.x;
        v1 = f.y;
      }
    } else {
      if (gc < iw) v0 = p[0];
      if (gc + 1 < iw) v1 = p[1];
    }
  }
  struct alignas(4) Pair { S lo, hi; } s{to_stage<T>(v0), to_stage<T>(v1)};
  return *reinterpret_cast<std::uint32_t*>(&s);
}

// Image rows r0.. (rows of them), columns c0..c0+127, staged in the permuted layout: position
// 8q + e of a row holds column 16e + q. Seen as an 8 (e) x 16 (q) matrix, a 128-column row
// segment is transposed: each lane loads the pair (e = lane/4, q = 2(lane%4) + {0,1}) of both
// 8x8 halves, movmatrix transposes them in registers, and one conflict-free 4-byte store each
// puts them in place (the same shared-memory wavefronts as a plain 16-byte staging).
template <class T>
__device__ __forceinline__ void stage_image_perm(const typename T::In* img, long long ld, int ih,
                                                 int iw, int r0, int rows, int c0, int segs,
                                                 typename T::Stage* dst, int ldd, bool vec_ok) {
  constexpr int UNR = 4;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int e = lane >> 2, pp = lane & 3;
  // work item = (row, 128-column segment), warp-uniform
  for (int base = warp; base < rows * segs; base += kMmaWarps * UNR) {
    std::uint32_t v[UNR][2];
#pragma unroll
    for (int u = 0; u < UNR; ++u) {
      const int it = base + u * kMmaWarps, row = it / segs, seg = it % segs;
#pragma unroll
      for (int h = 0; h < 2; ++h)
        v[u][h] = row < rows ? load_pair<T>(img, ld, ih, iw, r0 + row,
                                            c0 + kMmaWc * seg + 16 * e + 8 * h + 2 * pp, vec_ok)
                             : 0u;
    }
#pragma unroll
    for (int u = 0; u < UNR; ++u) {
      const int it = base + u * kMmaWarps, row = it / segs, seg = it % segs;
      if (row < rows) {  // warp-uniform: movmatrix needs the whole warp
#pragma unroll
        for (int h = 0; h < 2; ++h)
          *reinterpret_cast<std::uint32_t*>(dst + row * ldd + kMmaWc * seg + 8 * (8 * h + e) +
                                            2 * pp) = movmatrix_trans(v[u][h]);
      }
    }
  }
}

// Per-warp diagonal buffer: one array per lane column t (the partial of diagonal D from lane
// column t sits at off(t) + D), so a lane writes its 16 consecutive diagonals with four 16-byte stores.
// The per-t offsets align each lane's first store and put the 8 lanes of each store phase on
// distinct banks; the reader does four conflict-free 4-byte loads per diagonal.
// Lane column t's first owned diagonal (lane group 0) is W(4 - t) - 1 (W = 2·NJ); o(t) makes
// it a multiple of 4, and the stride (words per t, a multiple of 4) is the smallest that puts
// the four t's first stores on distinct 16-byte chunks mod 4.
__host__ __device__ constexpr int mma_buf_o(int nj, int t) {
  return ((1 - 2 * nj * (4 - t)) % 4 + 4) % 4;
}
__host__ __device__ constexpr int mma_buf_chunk(int nj, int t, int str) {
  return ((t * str + mma_buf_o(nj, t) + 2 * nj * (4 - t) - 1) / 4) % 4;
}
__host__ __device__ constexpr int mma_buf_stride(int nj) {
  for (int s = (kMmaWc + 8 * nj - 1 + 4 + 3) / 4 * 4;; s += 4) {
    bool ok = true;
    for (int t = 0; t < 4; ++t)
      for (int u = 0; u < t; ++u) ok = ok && mma_buf_chunk(nj, t, s) != mma_buf_chunk(nj, u, s);
    if (ok) return s;
  }
}
__host__ __device__ constexpr int mma_buf_words(int nj) { return 4 * mma_buf_stride(nj); }
template <int NJ> struct MmaBuf {
  static constexpr int NDIAG = kMmaWc + 8 * NJ - 1, STR = mma_buf_stride(NJ),
                       WORDS = mma_buf_words(NJ);
  __host__ __device__ static constexpr int off(int t) { return t * STR + mma_buf_o(NJ, t); }
};

// The partial-sum buffer C of the fused mma path (O(edges), not the paper's full hR x NC x wR):
// for output row r and CTA boundary b (1 <= b < nJ, at column b·Wc), the kw - 1 output columns
// j = b·Wc - (kw - 1) .. b·Wc - 1 whose diagonals cross it, one partial from the CTA on its left
// (side 0) and one from the CTA on its right (side 1).
__host__ __device__ __forceinline__ std::size_t mma_edge_slot(const Geo& g, int r, int b,
                                                               int side, int j) {
  const int e = g.kw - 1;
  return ((static_cast<std::size_t>(r) * g.nJ + (b - 1)) * 2 + side) * e + (j - b * g.Wc + e);
}

// K̂ B fragments in shared memory (when not in registers): [kc][j][lane] pairs of words.
struct MmaSmem {
  std::size_t s, b, buf, total;
  __host__ __device__ explicit MmaSmem(const Geo& g) {
    const int nj = g.hB / 8;
    s = 0;
    b = align_up(sizeof(std::uint16_t) * static_cast<std::size_t>(g.rowsS) * g.ldS, 128);
    buf = align_up(b + 8 * 32 * static_cast<std::size_t>(nj) * (g.hKp / 16), 128);
    total = buf + sizeof(float) * kMmaWarps * mma_buf_words(nj);
  }
};

// The K̂ B fragments stay in registers up to this many (NJ·KC); beyond, each 16-row chunk of y
// is loaded from shared memory per row (square kernels from k = 41: the accumulators need the
// registers).
constexpr int kMmaBRegMax = 16;
// CTAs per SM the register allocation must allow (8 warps each): 3 (<= 85 registers) measured
// faster than 2 with the extra registers, except for the largest tiles, which would spill.
// fp16 (per-tile half accumulators converted into the float sets) needs more registers.
__host__ __device__ constexpr int mma_min_blocks(int nj, int kc, bool half_acc = false) {
  return nj * kc >= 12 || half_acc ? 2 : 3;
}

// NJ: 8-column n-tiles of x (x padded to hB = 8·NJ); KC: 16-row chunks of y (ĥK = 16·KC).
template <class T, Epi E, int NJ, int KC>
__global__ void __launch_bounds__(kMmaWarps * 32,
                                  mma_min_blocks(NJ, KC, MmaOp<T>::CREGS == 2))
    pblock_mma_kernel(Args a) {
  static_assert(kHasMma<T>, "mma.sync path: fp16, fp16fp32, bf16");
  using S = typename T::Stage;
  using Op = MmaOp<T>;
  using Buf = MmaBuf<NJ>;
  constexpr int W = 2 * NJ;                   // x per lane t
  constexpr int NS = 7 + NJ;                  // accumulator sets: i - j = -(NJ-1) .. 7
  constexpr int NQ = 2 * NS + 1;              // a lane's consecutive diagonals: 16 + W - 1
  constexpr int NDIAG = Buf::NDIAG;           // diagonals of one 128-column pass
  constexpr int NB = (NDIAG + 31) / 32;
  constexpr int NCARRY = (8 * NJ - 1 + 31) / 32;  // reader rounds holding crossing diagonals
  constexpr bool BREG = NJ * KC <= kMmaBRegMax;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const Geo& g = a.g;
  const MmaSmem lay(g);
  const int jb = blockIdx.x, rb = blockIdx.y;
  const int nh = g.Wc / kMmaWc, ldS = g.ldS;
  const int c0 = jb * g.Wc, r0 = rb * g.dB;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int gq = lane >> 2, tq = lane & 3;  // mma "groupID" and "threadID_in_group"
  S* sS = reinterpret_cast<S*>(smem_raw + lay.s);
  uint2* sB = reinterpret_cast<uint2*>(smem_raw + lay.b);
  float* buf = reinterpret_cast<float*>(smem_raw + lay.buf) + warp * Buf::WORDS;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // The recombination pass may be scheduled now; it waits for this grid's end to read C.
  asm volatile("griddepcontrol.launch_dependents;");
#endif
  // Slots no lane writes (diagonals outside a lane t's range, whose x would fall outside the
  // pass) stay zero for every row.
  for (int w = lane; w < Buf::WORDS; w += 32) buf[w] = 0.f;
  stage_image_perm<T>(static_cast<const typename T::In*>(a.in), a.in_ld, g.ih, g.iw, r0, g.rowsS,
                      c0, nh, sS, ldS, a.vec_ok);

  // K̂ as the B operand (k = y, n = x): lane (g, t) holds rows y = 16kc + 2t (+1, +8, +9) of
  // column n = g, i.e. x = W·(g/2) + 2j + g%2 of n-tile j.
  const S* kt = static_cast<const S*>(a.kt);
  auto bfrag = [&](int j, int kc) {
    const int x = W * (gq >> 1) + 2 * j + (gq & 1);
    const std::uint32_t* p =
        reinterpret_cast<const std::uint32_t*>(kt + x * g.hKp + kc * 16 + 2 * tq);
    return make_uint2(p[0], p[4]);
  };
  uint2 breg[BREG ? NJ : 1][BREG ? KC : 1];
  if constexpr (BREG) {
#pragma unroll
    for (int j = 0; j < NJ; ++j)
#pragma unroll
      for (int kc = 0; kc < KC; ++kc) breg[j][kc] = bfrag(j, kc);
  } else {
    for (int f = warp; f < NJ * KC; f += kMmaWarps) sB[f * 32 + lane] = bfrag(f % NJ, f / NJ);
  }
  __syncthreads();

  // ldmatrix.trans of m-tile i, chunk kc: matrix lane/8 = (h = m/8, y half), row lane%8.
  const S* a_lane = sS + ((lane >> 4) * 8 + (lane & 7)) * ldS + 8 * ((lane >> 3) & 1);
  // This lane's first owned diagonal (k = W-1) and the store of the left-edge ones (g = 0).
  const int u_t = W * (3 - tq);  // diagonal of q[k]: 16g + u_t + k
  float* const wr_own = buf + Buf::off(tq) + 16 * gq + u_t + W - 1;
  float* const wr_low = buf + Buf::off(tq) + u_t;

  for (int rr = warp; rr < g.dB; rr += kMmaWarps) {
    const int r = r0 + rr;
    if (r >= g.hR) break;  // warp-uniform
    float carry[NCARRY];
#pragma unroll
    for (int cI = 0; cI < NCARRY; ++cI) carry[cI] = 0.f;

    for (int hh = 0; hh < nh; ++hh) {
      const S* a_row = a_lane + rr * ldS + kMmaWc * hh;
      float acc[NS][4];
#pragma unroll
      for (int s = 0; s < NS; ++s) acc[s][0] = acc[s][1] = acc[s][2] = acc[s][3] = 0.f;
      if constexpr (BREG || Op::CREGS == 2) {
        auto bf = [&](int j, int kc) {
          if constexpr (BREG) return breg[j][kc];
          else return sB[(kc * NJ + j) * 32 + lane];
        };
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          std::uint32_t af[KC][4];
#pragma unroll
          for (int kc = 0; kc < KC; ++kc) ldmatrix_x4_trans(af[kc], a_row + 16 * kc * ldS + 16 * i);
#pragma unroll
          for (int j = 0; j < NJ; ++j) {
            float* c = acc[i - j + NJ - 1];
            if constexpr (Op::CREGS == 4) {
#pragma unroll
              for (int kc = 0; kc < KC; ++kc) {
                const uint2 b = bf(j, kc);
                const std::uint32_t bb[2] = {b.x, b.y};
                Op::runf(c, af[kc], bb);
              }
            } else {
              // fp16: P = K̂ᵀŜ in the half accumulator over all of y (the paper's fp16), the
              // diagonal sums in float.
              std::uint32_t h[2] = {0u, 0u};
#pragma unroll
              for (int kc = 0; kc < KC; ++kc) {
                const uint2 b = bf(j, kc);
                const std::uint32_t bb[2] = {b.x, b.y};
                Op::run(h, af[kc], bb);
              }
#pragma unroll
              for (int e = 0; e < 4; ++e) c[e] += Op::get(h, e);
            }
          }
        }
      } else {  // fp32 accumulators, K̂ fragments per 16-row chunk of y from shared memory
#pragma unroll
        for (int kc = 0; kc < KC; ++kc) {
          std::uint32_t b[NJ][2];
#pragma unroll
          for (int j = 0; j < NJ; ++j) {
            const uint2 v = sB[(kc * NJ + j) * 32 + lane];
            b[j][0] = v.x;
            b[j][1] = v.y;
          }
#pragma unroll
          for (int i = 0; i < 8; ++i) {
            std::uint32_t af[4];
            ldmatrix_x4_trans(af, a_row + 16 * kc * ldS + 16 * i);
#pragma unroll
            for (int j = 0; j < NJ; ++j) Op::runf(acc[i - j + NJ - 1], af, b[j]);
          }
        }
      }

      // Diagonal 16g + u_t + k of element e of set s: k = 2s + 1 + (m/8 - e%2).
      float q[NQ];
      q[0] = acc[0][1];
#pragma unroll
      for (int s = 0; s < NS; ++s) q[2 * s + 1] = acc[s][0] + acc[s][3];
#pragma unroll
      for (int s = 1; s < NS; ++s) q[2 * s] = acc[s][1] + acc[s - 1][2];
      q[2 * NS] = acc[NS - 1][2];
      // q[0 .. W-2] are diagonals of lane group g - 1 (its q[16 ..]): fold them there.
#pragma unroll
      for (int k = 0; k < W - 1; ++k) {
        const float v = __shfl_down_sync(0xffffffffu, q[k], 4);
        if (gq < 7) q[16 + k] += v;
      }
      __syncwarp();  // the previous pass's reads are done
#pragma unroll
      for (int m = 0; m < 4; ++m)
        *reinterpret_cast<float4*>(wr_own + 4 * m) =
            make_float4(q[W - 1 + 4 * m], q[W + 4 * m], q[W + 1 + 4 * m], q[W + 2 + 4 * m]);
      if (gq == 0) {  // the pass's left-edge diagonals have no lane group below to fold into
#pragma unroll
        for (int k = 0; k < W - 1; ++k) wr_low[k] = q[k];
      }
      __syncwarp();
      const int jofs = c0 + kMmaWc * hh - (8 * NJ - 1);  // output column of diagonal D
#pragma unroll
      for (int b = 0; b < NB; ++b) {
        const int D = 32 * b + lane;
        if (D >= NDIAG) continue;
        float s = (buf[Buf::off(0) + D] + buf[Buf::off(1) + D]) +
                  (buf[Buf::off(2) + D] + buf[Buf::off(3) + D]);
        // Diagonals crossing into the next pass (D >= 128 from pass step 4 on): the same lane
        // reads them in round b - 4 there.
        if (b < NCARRY) s += carry[b];
        if (b >= 4 && hh + 1 < nh) {
          carry[b - 4] = s;
          continue;
        }
        // Diagonal d = j - c0' of this pass: every x < kw inside the CTA for 0 <= d <= 128-kw;
        // at the CTA's ends the kw-1 others are partial (the padded x >= kw add nothing).
        const int d = D - (8 * NJ - 1), j = jofs + D;
        const bool left = hh == 0 && d < 0, right = D >= kMmaWc && d > kMmaWc - g.kw;
        if (left && d <= -g.kw) continue;  // no x < kw reaches this CTA: the neighbour's pixel
        if (j >= 0 && j < g.wR) {
          using Out = typename T::Out;
          Out* R = static_cast<Out*>(a.out) + static_cast<std::size_t>(r) * a.out_ld + j;
          if (!left && !right) {  // final (nI = 1 here)
            *R = narrow<Out>(s);
            mark_nonfinite(a.nf, s);
          } else if constexpr (E == Epi::partial_c) {
            // C holds only the edges: kw - 1 columns left of each CTA boundary b, one partial
            // from each side (mma_edge_slot); the left edge of this CTA is boundary jb.
            float* C = static_cast<float*>(a.ws);
            C[mma_edge_slot(g, r, left ? jb : jb + 1, left ? 1 : 0, j)] = s;
          } else {
            atomicAdd(R, narrow<Out>(s));
          }
        }
      }
    }
  }
}

}  // namespace i2t
}  // namespace cuda
}  // namespace tc
