// CPU half of tensorconv.astropy's NaN interpolation (see nan_interp.hpp).
#include "nan_interp.hpp"

#include <algorithm>
#include <atomic>
#include <vector>

#include "../core/types.hpp"
#include "parallel.hpp"

namespace tc {
namespace {

// S[i - r0, j] += weight of every invalid pixel under window (i, j), for output rows [r0, r1): the
// invalid pixels of padded rows [r0, r1 + kh - 1), found by binary search in the sorted list.
// Kernel rows reversed once so that the inner loop walks S and the weights forward.
void scatter_rows(const NanInterpArgs& a, const std::vector<double>& krev, std::int64_t r0,
                  std::int64_t r1, double* s) {
  const std::int64_t* first = std::lower_bound(a.nan_idx, a.nan_idx + a.n_nan, r0 * a.p_cols);
  const std::int64_t* last =
      std::lower_bound(first, a.nan_idx + a.n_nan, (r1 + a.kh - 1) * a.p_cols);
  for (const std::int64_t* p = first; p != last; ++p) {
    const std::int64_t pr = *p / a.p_cols, pc = *p % a.p_cols;
    const std::int64_t u0 = std::max<std::int64_t>(0, pr - (r1 - 1));
    const std::int64_t u1 = std::min<std::int64_t>(a.kh - 1, pr - r0);
    // output column oc = pc - v for v in [0, kw): oc in [max(0, pc-kw+1), min(out_cols-1, pc)]
    const std::int64_t c0 = std::max<std::int64_t>(0, pc - a.kw + 1);
    const std::int64_t c1 = std::min<std::int64_t>(a.out_cols - 1, pc);
    if (c1 < c0) continue;
    for (std::int64_t u = u0; u <= u1; ++u) {
      double* srow = s + (pr - u - r0) * a.out_cols;
      // weight of (pr - u, oc) is kernel[u][pc - oc] = krev[u][kw - 1 - pc + oc]
      const double* w = krev.data() + u * a.kw + (a.kw - 1 - pc);
      for (std::int64_t oc = c0; oc <= c1; ++oc) srow[oc] += w[oc];
    }
  }
}

template <class T>
std::int64_t run(const NanInterpArgs& a) {
  std::vector<double> krev(static_cast<std::size_t>(a.kh * a.kw));
  for (std::int64_t u = 0; u < a.kh; ++u)
    for (std::int64_t v = 0; v < a.kw; ++v) krev[u * a.kw + v] = a.kernel[u * a.kw + a.kw - 1 - v];
  const T* p0 = static_cast<const T*>(a.p0);
  T* top = static_cast<T*>(a.top);
  // bands of output rows: each thread scatters into a band-sized S of its own (cache
  // resident) and finishes those rows; returns the number of NaN results (astropy's warning)
  const std::int64_t band = 16;
  const double lim = a.tau * a.abs_ksum;
  std::atomic<std::int64_t> nans{0};
  parallel_chunks((a.out_rows + band - 1) / band, 0, 1, [&](std::int64_t b0, std::int64_t b1) {
    std::vector<double> s(static_cast<std::size_t>(band * a.out_cols));
    std::int64_t local = 0;
    for (std::int64_t b = b0; b < b1; ++b) {
      const std::int64_t r0 = b * band, r1 = std::min(a.out_rows, r0 + band);
      std::fill(s.begin(), s.end(), 0.0);
      if (a.n_nan) scatter_rows(a, krev, r0, r1, s.data());
      for (std::int64_t i = r0; i < r1; ++i) {
        T* orow = top + i * a.out_stride;
        const double* srow = s.data() + (i - r0) * a.out_cols;
        // the common case as one branch-free (vectorized) loop; the few outputs whose weight
        // sum cancels, or that fall below convolve_fft's floor, are redone by finish()
        int redo = 0;
        for (std::int64_t j = 0; j < a.out_cols; ++j) {
          const double bot = a.ksum - srow[j];
          const double t = static_cast<double>(orow[j]);  // astropy's orders of operations
          const double v = a.mode == 0 ? t / bot * a.scale : t * a.scale / bot;
          const bool bad = !(bot >= lim || bot <= -lim) || (a.mode == 1 && bot / a.wnorm < a.floor);
          redo |= bad;
          orow[j] = bad ? orow[j] : static_cast<T>(v);  // a bad output keeps its numerator
          local += !bad && v != v;
        }
        if (!redo) continue;
        for (std::int64_t j = 0; j < a.out_cols; ++j) {
          const double bot = a.ksum - srow[j];
          if (!(bot >= lim || bot <= -lim) || (a.mode == 1 && bot / a.wnorm < a.floor)) {
            const T v = nan_interp_detail::finish<T>(a, p0, i, j, orow[j], srow[j]);
            local += v != v;
            orow[j] = v;
          }
        }
      }
    }
    nans += local;
  });
  return nans.load();
}

}  // namespace

std::int64_t nan_interp(const NanInterpArgs& a) {
  if (a.on_device) {
#ifdef TC_WITH_CUDA
    nan_interp_cuda(a);
    return -1;
#else
    throw ValueError("nan_interp: device arrays need a CUDA build of tensorconv");
#endif
  }
  if (a.dtype == DType::f64) return run<double>(a);
  if (a.dtype == DType::f32) return run<float>(a);
  throw TypeError("nan_interp: storage must be float32 or float64");
}

}  // namespace tc
