// simd_u8: the Kelefouras & Keramidas (TPDS 2022) 8-bit direct convolution, OpenCV filter2D
// semantics: out = clip(floor(sum(image * kernel) / divisor), 0, 255), exact at every pixel.
// Shared declarations between the dispatch/driver file and the per-algorithm files.
#pragma once
#include <cstddef>
#include <cstdint>
#include <new>
#include <memory>
#include <string>
#include <vector>

namespace tc {
namespace u8 {

enum class Border : int { constant, replicate, reflect101 };
Border parse_border(const std::string& name);  // ValueError naming the valid borders

// The paper's algorithms plus our extensions (pairs: broadcast coefficient pairs, wide: 16-bit
// coefficients, portable: scalar).
enum class Algo : int { alg1, alg2, alg3, sep, pairs, wide, portable };
const char* algo_name(Algo a);

// floor(x / d) for 0 <= x < 2^w, Algorithm 4: case A (d = 2^b) x >> b; case B (frac(f) < 1/2)
// ((x + 1) * floor(f)) >> (w + b); case C (x * ceil(f)) >> (w + b), with f = 2^(w+b) / d.
struct Divider {
  char kase = 'A';
  int b = 0;
  std::uint64_t f = 0;
};
Divider make_divider(std::int64_t d, int w);

// How 16-bit intermediate results are read: signed (max with 0 before dividing) or unsigned.
enum class IR : int { s16, u16, s32 };

// Allocator for coefficient tables: 64-byte alignment, so a vector coefficient load never
// crosses a cache line (malloc's 16-byte alignment split 3 of 4 AVX-512 coefficient loads).
template <class T>
struct Aligned64 {
  using value_type = T;
  Aligned64() = default;
  template <class U>
  Aligned64(const Aligned64<U>&) {}
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{64}));
  }
  void deallocate(T* p, std::size_t) { ::operator delete(p, std::align_val_t{64}); }
  template <class U>
  bool operator==(const Aligned64<U>&) const { return true; }
  template <class U>
  bool operator!=(const Aligned64<U>&) const { return false; }
};

// One vectorized routine bound to its prepared coefficients. A block computes `outputs` pixels of
// each of `rows_out` output rows from rows[0 .. kh + rows_out - 2] (pointers at the first input
// column of the block), reading `reads` bytes of each row and writing `writes` bytes at each out
// pointer; bytes past `outputs` are garbage that the driver overwrites with the next block.
// A BlockFn runs n consecutive blocks (pointers advance by `outputs`).
struct Block;
using BlockFn = void (*)(const Block&, const std::uint8_t* const* rows, std::uint8_t* const* outs,
                         std::int64_t n);
struct Block {
  BlockFn fn = nullptr;   // rows_out rows at once (register blocking)
  BlockFn fn1 = nullptr;  // one row (row tails)
  int outputs = 0, reads = 0, writes = 0, rows_out = 1;
  int kh = 0, kw = 0;
  IR ir = IR::s16;
  Divider div;
  std::int64_t divisor = 1;       // the portable path divides exactly
  std::vector<std::uint8_t, Aligned64<std::uint8_t>> tab;  // vector coefficients
  std::vector<std::int32_t> k32;  // the kernel as int32 (portable) or coefficient pairs (wide)
};

// One tap of a 1-D pass of Algorithm 7 over 16-bit values: index v (row or column), plus its
// mirror m (>= 0 for symmetric factors: added before multiplying, exact modulo 2^16), times c,
// as a shift when c = 2^shift (shift 0: a plain add), else mullo (shift -1).
constexpr int kMaxTaps = 15;
struct SepTap {
  int v = 0, m = -1, shift = -1;
  std::int32_t c = 0;
};

// Separable kernel (Algorithm 7): kernel = outer(a, b); vertical pass into a 16-bit row, then
// horizontal pass. V unsigned: the column sums are read as uint16 (a >= 0).
struct Separable;
// Output rows [b, e) of one image: rows[i + u] is the (border-mapped) input row that kernel row u
// of output row i reads; t is the temporary row (sep_temp_len(w, kw) elements, 64-byte
// aligned), whose kw - 1 border columns ax + x (x < 0 or x >= w; border_dst[c] = ax + x) hold the
// sum at column border_src[c] (-1: zero).
struct SepRows {
  const std::uint8_t* const* rows;
  std::int64_t w;
  std::int16_t* t;
  int ax;
  const std::int64_t* border_src;
  const std::int64_t* border_dst;
  std::uint8_t* out;
  std::int64_t out_stride;
};
using SepRowsFn = void (*)(const Separable&, const SepRows&, std::int64_t b, std::int64_t e);
struct Separable {
  int kh = 0, kw = 0;
  std::vector<std::int32_t> a, b;
  bool v_unsigned = false;
  IR h_ir = IR::s16;      // s16/u16: 16-bit horizontal IRs (mullo); s32: 32-bit (madd)
  std::int64_t bias = 0;  // added to 32-bit sums when V was stored biased by -32768
  std::int64_t divisor = 1;
  Divider div;  // for the horizontal IR width
  struct Taps {
    int n = 0;
    SepTap t[kMaxTaps];
  };
  Taps vtaps, htaps;  // from a (rows) and b (columns), prepared once per kernel
  bool clip255 = true;  // 16-bit IRs: floor(sum / divisor) can exceed 255 (else no min needed)
  SepRowsFn run = nullptr;  // the vector tier's row loop
  // 2^(8-b) when the kernel is the 3x3 binomial [1,2,1] x [1,2,1], the divisor 2^b with
  // 4 <= b <= 8 and the tier AVX-512 (binomial3_rows_avx512 computes it); else 0.
  int binomial3_scale = 0;
  bool biased() const { return v_unsigned && h_ir == IR::s32; }
};
// Elements of Algorithm 7's temporary row for width w (both layouts of sep_impl.hpp fit).
inline std::int64_t sep_temp_len(std::int64_t w, int kw) { return (w + kw + 192 + 31) / 32 * 32; }
// Column sum at column x as the vertical pass stores it (scalar; inline: the vector passes call
// it for every row's border columns).
inline std::int16_t sep_column(const Separable& s, const std::uint8_t* const* rows,
                               std::int64_t x) {
  std::int32_t sum = 0;
  for (int u = 0; u < s.kh; ++u) sum += s.a[u] * rows[u][x];
  std::uint16_t bits = static_cast<std::uint16_t>(sum);
  if (s.biased()) bits ^= 0x8000u;
  return static_cast<std::int16_t>(bits);
}
// The fused 3x3 binomial pass (binomial3_avx512.cpp) over output rows [b, e) of one image, for
// centred anchors and w >= kBinomial3MinW (its chunks read the 64 columns on each side).
constexpr std::int64_t kBinomial3MinW = 192;
struct Binomial3 {
  const std::uint8_t* const* rows;  // rows[i]: the (border-mapped) input row above output row i
  std::int64_t w;
  std::int64_t lsrc, rsrc;  // the columns whose pixels stand for columns -1 and w (-1: zero)
  std::uint8_t* out;
  std::int64_t out_stride;
  int scale;  // Separable::binomial3_scale
  int phase;  // the first column at which output row 0 starts a cache line
  std::int64_t band;  // rows per column walk (binomial3_band)
};
// Rows per column walk for row stride `stride`: a walk keeps ~4 lines per row in L1, and rows
// whose starts share L1 sets (strides of 1024, 2048, 4096 bytes) evict each other: 4 rows per
// distinct set among 64 consecutive rows, 4 .. 64 (measured: 2048x256 at 64 rows 2.8x the
// cycles of 8 rows; 1920 wide, 64 rows best).
std::int64_t binomial3_band(std::int64_t stride);
void binomial3_rows_avx512(const Binomial3& g, std::int64_t b, std::int64_t e);
// Exact scalar output from column sums t[0 .. kw) as the vertical pass stored them.
std::uint8_t sep_scalar_output(const Separable& s, const std::int16_t* t);
std::uint8_t clip_div(std::int64_t sum, std::int64_t divisor);  // clip(floor(sum / d), 0, 255)

// The full analysis of one (kernel, divisor, algorithm request): what runs and why.
struct Analysis {
  Algo algo = Algo::portable;
  int ir_bits = 32;
  bool ir_unsigned = false;
  char div_case = 'A';
  bool separable = false;  // the kernel is an outer product of integer vectors
  std::vector<std::int32_t> a, b;
  std::int64_t sum_min = 0, sum_max = 0;  // range of the exact sum over uint8 images
  int row_block = 1;
  std::string isa;  // the vector code that runs it: "avx512", "avx2" or "portable"
  std::string why;  // one line: why this algorithm
};

// Run-time dispatch: the widest tier the CPU offers, unless an environment variable caps it:
// TENSORCONV_FORCE_PORTABLE (scalar C++), TENSORCONV_FORCE_AVX2 (no AVX-512 tier). sep and
// pairs have AVX-512 versions; the other vector algorithms are AVX2 on both vector tiers.
enum class Isa : int { portable, avx2, avx512 };
const char* isa_name(Isa i);
Isa isa_in_use();
bool avx2_supported();
bool portable_forced();
bool use_avx2();          // isa_in_use() != portable
std::string path_note();  // for methods(): which path runs here and why

Analysis analyze(const std::int32_t* k, int kh, int kw, std::int64_t divisor,
                 const std::string& algorithm, Isa isa);

// A prepared kernel (analysis.cpp, cached): what runs, its coefficient tables and taps.
constexpr int kMaxK = 15;  // kernel rows and columns
struct Prepared {
  Analysis an;
  Block block;
  Separable sep;
};
std::shared_ptr<const Prepared> prepared(const std::int32_t* k, int kh, int kw, std::int64_t d,
                                         const std::string& request, Isa isa);

void filter2d(const std::uint8_t* in, std::int64_t h, std::int64_t w, std::int64_t in_stride,
              std::uint8_t* out, std::int64_t out_stride, const std::int32_t* k, int kh, int kw,
              std::int64_t divisor, Border border, int ay, int ax, const std::string& algorithm,
              int threads);

// Per-algorithm builders (AVX2 files: called only when avx2_supported(); AVX-512 files: only
// when cpu_has_avx512bw()).
void build_alg1_avx2(Block& b, const std::int32_t* k, int row_block);
void build_alg2_avx2(Block& b, const std::int32_t* k);
void build_alg3_avx2(Block& b, const std::int32_t* k);
void build_wide_avx2(Block& b, const std::int32_t* k);
void build_pairs_avx2(Block& b, const std::int32_t* k);    // b.ir set first
void build_pairs_avx512(Block& b, const std::int32_t* k);  // b.ir set first
void build_portable(Block& b, const std::int32_t* k);
// Algorithm 7's row loop per vector tier (sep_avx2.cpp, sep_avx512.cpp): for each output row,
// the vertical pass into t, the border columns, the horizontal pass into the output row.
void sep_rows_avx2(const Separable& s, const SepRows& j, std::int64_t b, std::int64_t e);
void sep_rows_avx512(const Separable& s, const SepRows& j, std::int64_t b, std::int64_t e);

}  // namespace u8
}  // namespace tc
