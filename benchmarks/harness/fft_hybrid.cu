// Harness: "fft by rows" (fft_rows.cuh) against the 2-D transform pair that
// fft.cu runs. Variants:
//   rows+copy    1-D R2C along the rows, correlate_down, 1-D C2R along the rows into a
//                workspace, the valid W - kw + 1 columns copied out
//   rows+split4/8  the same, with the C2R in 4 / 8 classes of rows straight into the output
//                (each row's kw - 1 wrapped values spill onto the next row, written later) and
//                only the last class through the workspace
//   rows_v1+copy the first product kernel (one thread per column, global loads)
//   2d           fft.cu's direct path: 2-D R2C on the image, spectrum product, 2-D C2R, crop
//   fp32 only: pkg+low8 (the package's pipeline: the 8 lowest columns in float64, kept out of the
//   C2R, added by the crop), and where the error comes from: pkg+dc (the first package pipeline: DC column in float64,
//   kept out of the C2R, added by the crop), r2c64 (the same with the R2C in fp64, its spectrum
//   rounded to complex64), c2r64 (with the C2R and crop in fp64); the latter two untimed
// Median of 20 (CUDA events, harness.cuh), fp32 and fp64, k x k kernels U[0, 1) on a U[0, 1)
// image. Accuracy: every fp32 output against the fp64 rows+copy result (MAPE in %), and every
// variant on 512 sampled outputs (corners, row ends) against a float64 direct sum on the host.
// Build: nvcc -std=c++17 -O3 -arch=sm_90a -Icsrc -Ibenchmarks/harness benchmarks/harness/fft_hybrid.cu -lcufft
// Usage: fft_hybrid [sizes] [ks] [precs], e.g. 4096,16384 3,15,25,35,55 fp32,fp64
#include <cufft.h>

#include <cmath>
#include <type_traits>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cuda/methods/fft/fft_rows.cuh"
#include "harness.cuh"

using namespace tc::cuda;

#define CK(x)                                                                       \
  do {                                                                              \
    cufftResult r_ = (x);                                                           \
    if (r_ != CUFFT_SUCCESS) {                                                      \
      std::fprintf(stderr, "cuFFT %d at %s:%d: %s\n", int(r_), __FILE__, __LINE__, #x); \
      std::exit(2);                                                                 \
    }                                                                               \
  } while (0)

template <class T> struct Ty;
template <> struct Ty<float> {
  using C = float2;
  static constexpr cufftType r2c = CUFFT_R2C, c2r = CUFFT_C2R;
  static void fwd(cufftHandle p, float* i, float2* o) { CK(cufftExecR2C(p, i, o)); }
  static void inv(cufftHandle p, float2* i, float* o) { CK(cufftExecC2R(p, i, o)); }
  static const char* name() { return "fp32"; }
};
template <> struct Ty<double> {
  using C = double2;
  static constexpr cufftType r2c = CUFFT_D2Z, c2r = CUFFT_Z2D;
  static void fwd(cufftHandle p, double* i, double2* o) { CK(cufftExecD2Z(p, i, o)); }
  static void inv(cufftHandle p, double2* i, double* o) { CK(cufftExecZ2D(p, i, o)); }
  static const char* name() { return "fp64"; }
};

// rows+copy's product: a is H x mc (pitch mc), line v = a column; g[t * mc + v]; o is oh x mc.
template <class T, int R>
__global__ void __launch_bounds__(128) correlate_cols(const typename Ty<T>::C* __restrict__ a,
                                                      int mc, int h, const typename Ty<T>::C* __restrict__ g,
                                                      int kp, typename Ty<T>::C* __restrict__ o, int oh) {
  using C = typename Ty<T>::C;
  const int v = blockIdx.x * 128 + threadIdx.x;
  const int y0 = blockIdx.y * R;
  if (v >= mc) return;
  C acc[R];
#pragma unroll
  for (int r = 0; r < R; ++r) acc[r] = C{0, 0};
  for (int t0 = 0; t0 < kp; t0 += R) {
    C w[2 * R - 1];
#pragma unroll
    for (int c = 0; c < 2 * R - 1; ++c) {
      const int y = y0 + t0 + c;
      w[c] = y < h ? a[std::int64_t(y) * mc + v] : C{0, 0};
    }
#pragma unroll
    for (int s = 0; s < R; ++s) {
      const C gg = g[std::int64_t(t0 + s) * mc + v];
#pragma unroll
      for (int r = 0; r < R; ++r) fftrows::cmac(acc[r], w[r + s], gg);
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r)
    if (y0 + r < oh) o[std::int64_t(y0 + r) * mc + v] = acc[r];
}

// element-wise conversions for the accuracy variants (float2 <-> double2, double -> float)
__device__ inline float2 cvt(double2 v, float2*) { return make_float2(float(v.x), float(v.y)); }
__device__ inline double2 cvt(float2 v, double2*) { return make_double2(v.x, v.y); }
__device__ inline float cvt(double v, float*) { return float(v); }
__device__ inline double cvt(float v, double*) { return v; }
template <class A, class B>
__global__ void convert(const A* in, B* out, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = cvt(in[i], static_cast<B*>(nullptr));
}

template <class C>
__global__ void multiply(C* x, const C* k, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const C a = x[i], b = k[i];
    x[i] = C{a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x};
  }
}

struct Twiddle {  // e^{-2 pi i j / n}, exact index reduction
  std::vector<double> c, s;
  explicit Twiddle(int n) : c(n), s(n) {
    for (int j = 0; j < n; ++j) {
      const double a = 2.0 * M_PI * j / n;
      c[j] = std::cos(a);
      s[j] = -std::sin(a);
    }
  }
};

template <class T>
struct Run {
  using C = typename Ty<T>::C;
  int n, k, oh, ow, kp;
  static constexpr int R = 8;
  static constexpr int WARPS = sizeof(T) == 4 ? 8 : 4;
  std::vector<T> img, ker;

  Run(int n_, int k_, const std::vector<float>& im, const std::vector<float>& kr)
      : n(n_), k(k_), oh(n_ - k_ + 1), ow(n_ - k_ + 1), kp((k_ + R - 1) / R * R),
        img(im.begin(), im.end()), ker(kr.begin(), kr.end()) {}

  // taps along the rows, [t][v]: conj(sum_x k[t][x] w^{vx}) / n for v < nv (kp rows, zeros
  // past k), as Z (the data's complex type, or double2 for the float64 low columns)
  template <class Z>
  std::vector<Z> taps_of(int nv) const {
    Twiddle tw(n);
    std::vector<Z> g(std::size_t(kp) * nv, Z{0, 0});
    for (int t = 0; t < k; ++t)
      for (int v = 0; v < nv; ++v) {
        double re = 0, im = 0;
        for (int x = 0; x < k; ++x) {
          const int j = int((std::int64_t(v) * x) % n);
          re += ker[t * k + x] * tw.c[j];
          im += ker[t * k + x] * tw.s[j];
        }
        g[std::size_t(t) * nv + v] = Z{static_cast<decltype(Z::x)>(re / n),
                                       static_cast<decltype(Z::x)>(-im / n)};
      }
    return g;
  }
  std::vector<C> row_taps() const { return taps_of<C>(n / 2 + 1); }

  double direct(int y, int x) const {
    double s = 0;
    for (int a = 0; a < k; ++a)
      for (int b = 0; b < k; ++b) s += double(img[std::size_t(y + a) * n + x + b]) * ker[a * k + b];
    return s;
  }

  // C2R of the rows of O into dst (pitch ldd) in m classes of rows: class c (c = m-1 .. 1)
  // goes straight to the output, whose rows are contiguous, so each row's kw - 1 wrapped values
  // spill onto the start of the next row, which belongs to class c - 1 and is written later;
  // class 0 (holding the last row) goes to a workspace and is copied out.
  struct Split {
    int m = 1;
    std::vector<cufftHandle> plans;
    std::vector<int> first, count;
    void make(int m_, int n, int mc, int oh, int ow) {
      m = m_;
      first.assign(m, 0);
      count.assign(m, 0);
      plans.assign(m, 0);
      for (int c = 0; c < m; ++c) {
        // rows y with (oh - 1 - y) % m == c
        const int f = (oh - 1 - c) % m;  // smallest such y
        first[c] = f;
        count[c] = oh - 1 - c >= 0 ? (oh - 1 - c - f) / m + 1 : 0;
        int nn[1] = {n}, ie[1] = {mc}, oe[1] = {c == 0 ? n : ow};
        CK(cufftPlanMany(&plans[c], 1, nn, ie, 1, m * mc, oe, 1, c == 0 ? n : m * ow, Ty<T>::c2r,
                         count[c]));
      }
    }
    void run(C* o, int mc, T* out, int ow, T* ws, int n) {
      for (int c = m - 1; c >= 1; --c)
        Ty<T>::inv(plans[c], o + std::size_t(first[c]) * mc, out + std::size_t(first[c]) * ow);
      Ty<T>::inv(plans[0], o + std::size_t(first[0]) * mc, ws);
      cudaMemcpy2DAsync(out + std::size_t(first[0]) * ow, std::size_t(m) * ow * sizeof(T), ws,
                        n * sizeof(T), ow * sizeof(T), count[0], cudaMemcpyDeviceToDevice);
    }
    ~Split() {
      for (auto p : plans) cufftDestroy(p);
    }
  };

  // returns the rows result (host) for the accuracy comparison
  std::vector<T> go(std::vector<std::string>& lines, const std::vector<double>* ref) {
    const std::size_t npx = std::size_t(n) * n, mc = n / 2 + 1;
    harness::Dev d_img(npx * sizeof(T)), d_spec(mc * n * sizeof(C)), d_o(mc * n * sizeof(C)),
        d_out(std::size_t(oh) * ow * sizeof(T)), d_ws(std::size_t(n) * n * sizeof(T));
    TC_CUDA_CHECK(cudaMemcpy(d_img.p, img.data(), npx * sizeof(T), cudaMemcpyHostToDevice));
    T* img_p = static_cast<T*>(d_img.p);
    C* spec = static_cast<C*>(d_spec.p);
    C* o = static_cast<C*>(d_o.p);
    T* out = static_cast<T*>(d_out.p);
    T* ws = static_cast<T*>(d_ws.p);
    std::vector<T> first_h;
    auto sample_err = [&](const std::vector<T>& h) {
      std::mt19937 rng(7);
      double worst = 0;
      for (int i = 0; i < 512; ++i) {
        int y = rng() % oh, x = rng() % ow;
        if (i < 4) { y = (i & 1) ? oh - 1 : 0; x = (i & 2) ? ow - 1 : 0; }
        if (i >= 4 && i < 40) { y = (i % 9) * (oh / 8); x = ow - 1 - (i % 5); }  // row ends
        y = std::min(y, oh - 1);
        const double r = direct(y, x), v = double(h[std::size_t(y) * ow + x]);
        worst = std::max(worst, std::fabs(v - r) / std::fabs(r));
      }
      return worst;
    };
    auto report = [&](const char* name, float ms, std::vector<T> h) {
      double mape = -1;
      if (ref) {
        double s = 0;
        for (std::size_t i = 0; i < h.size(); ++i) s += std::fabs(double(h[i]) - (*ref)[i]) / std::fabs((*ref)[i]);
        mape = 100.0 * s / double(h.size());
      }
      char buf[256];
      std::snprintf(buf, sizeof buf, "%-12s %5d %s k=%2d %8.4f ms  sample_maxrel %.2e  mape_pct %.2e",
                    name, n, Ty<T>::name(), k, ms, sample_err(h), mape);
      lines.push_back(buf);
      std::printf("%s\n", buf);
      std::fflush(stdout);
      if (first_h.empty()) first_h = std::move(h);
    };
    auto fetch = [&](const T* src) {
      std::vector<T> h(std::size_t(oh) * ow);
      TC_CUDA_CHECK(cudaMemcpy(h.data(), src, h.size() * sizeof(T), cudaMemcpyDeviceToHost));
      return h;
    };
    const std::vector<C> gr = row_taps();  // [t][v], kp rows (zeros past k)
    harness::Dev d_gr(gr.size() * sizeof(C));
    TC_CUDA_CHECK(cudaMemcpy(d_gr.p, gr.data(), gr.size() * sizeof(C), cudaMemcpyHostToDevice));
    const C* taps = static_cast<const C*>(d_gr.p);
    cufftHandle pf, pi;
    int nn[1] = {n};
    CK(cufftPlanMany(&pf, 1, nn, nullptr, 1, 0, nullptr, 1, 0, Ty<T>::r2c, n));
    CK(cufftPlanMany(&pi, 1, nn, nullptr, 1, 0, nullptr, 1, 0, Ty<T>::c2r, oh));
    using G = fftrows::Geometry<T, R, WARPS>;
    const std::size_t sm = G::smem_bytes(kp);
    TC_CUDA_CHECK(cudaFuncSetAttribute(fftrows::correlate_down<T, R, WARPS, 1>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, int(sm)));
    auto product = [&] {
      fftrows::correlate_down<T, R, WARPS, 1><<<G::grid(int(mc), oh), G::kThreads, sm>>>(
          spec, mc, n, int(mc), taps, mc, kp, o, mc, oh, nullptr);
    };
    auto crop = [&] {
      cudaMemcpy2DAsync(out, ow * sizeof(T), ws, n * sizeof(T), ow * sizeof(T), oh,
                        cudaMemcpyDeviceToDevice);
    };
    float ms = harness::median_ms([&] {
      Ty<T>::fwd(pf, img_p, spec);
      product();
      Ty<T>::inv(pi, o, ws);
      crop();
    });
    report("rows+copy", ms, fetch(out));
    for (int m : {4, 8}) {
      Split sp;
      sp.make(m, n, int(mc), oh, ow);
      TC_CUDA_CHECK(cudaMemset(out, 0xff, std::size_t(oh) * ow * sizeof(T)));  // NaN: unwritten fails
      ms = harness::median_ms([&] {
        Ty<T>::fwd(pf, img_p, spec);
        product();
        sp.run(o, int(mc), out, ow, ws, n);
      });
      report(m == 4 ? "rows+split4" : "rows+split8", ms, fetch(out));
    }
    {
      float a = harness::median_ms([&] { Ty<T>::fwd(pf, img_p, spec); });
      float b = harness::median_ms(product);
      float c = harness::median_ms([&] { Ty<T>::inv(pi, o, ws); });
      float d = harness::median_ms(crop);
      char buf[200];
      std::snprintf(buf, sizeof buf, "  rows steps %d %s k=%d: r2c %.4f  product %.4f  c2r %.4f  crop %.4f ms",
                    n, Ty<T>::name(), k, a, b, c, d);
      lines.push_back(buf);
      std::printf("%s\n", buf);
    }
    {  // the first version's product (one thread per column, global loads)
      constexpr int RR = 8;
      const dim3 g2(ceil_div(mc, 128), ceil_div(oh, RR));
      const int kpr = (k + RR - 1) / RR * RR;
      std::vector<C> gr2(std::size_t(kpr) * mc, C{0, 0});
      for (int t = 0; t < k; ++t)
        for (std::size_t v = 0; v < mc; ++v) gr2[t * mc + v] = gr[t * mc + v];
      harness::Dev d_gr2(gr2.size() * sizeof(C));
      TC_CUDA_CHECK(cudaMemcpy(d_gr2.p, gr2.data(), gr2.size() * sizeof(C), cudaMemcpyHostToDevice));
      ms = harness::median_ms([&] {
        Ty<T>::fwd(pf, img_p, spec);
        correlate_cols<T, RR><<<g2, 128>>>(spec, int(mc), n, static_cast<C*>(d_gr2.p), kpr, o, oh);
        Ty<T>::inv(pi, o, ws);
        crop();
      });
      report("rows_v1+copy", ms, fetch(out));
    }
    if constexpr (std::is_same<T, float>::value) {  // where fp32's error comes from
      std::vector<double2> kdc(kp, double2{0, 0});  // the DC column's taps (fft_rows.cuh, V = 1)
      for (int a = 0; a < k; ++a) {
        double t = 0;
        for (int b = 0; b < k; ++b) t += ker[a * k + b];
        kdc[a].x = t / n;
      }
      harness::Dev d_kdc(kp * sizeof(double2)), d_dc(std::size_t(n) * sizeof(double2));
      TC_CUDA_CHECK(cudaMemcpy(d_kdc.p, kdc.data(), kp * sizeof(double2), cudaMemcpyHostToDevice));
      const double2* kdc_p = static_cast<double2*>(d_kdc.p);
      double2* dc_p = static_cast<double2*>(d_dc.p);
      const dim3 cg = fftrows::crop_grid(oh, ow, fftrows::crop_blocks<T, 1>(0));
      auto prod_dc = [&](const C* a) {
        fftrows::correlate_down<T, R, WARPS, 1><<<G::grid(int(mc), oh), G::kThreads, sm>>>(
            a, mc, n, int(mc), taps, mc, kp, o, mc, oh, nullptr, kdc_p, dc_p, 1);
      };
      auto crop_dc = [&](const T* buf) {
        fftrows::crop_low<T, 1><<<cg, fftrows::kCropThreads>>>(buf, n, dc_p, nullptr, out, ow, oh, ow, nullptr);
      };
      ms = harness::median_ms([&] {
        Ty<T>::fwd(pf, img_p, spec);
        prod_dc(spec);
        Ty<T>::inv(pi, o, ws);
        crop_dc(ws);
      });
      report("pkg+dc", ms, fetch(out));
      {  // the package's pipeline now: the 8 lowest columns in float64 (fft_rows.cuh, V = 8)
        constexpr int V = 8;
        const Twiddle tw(n);
        const std::vector<double2> glo = taps_of<double2>(V);
        std::vector<double2> twx(ow);
        for (int x = 0; x < ow; ++x) twx[x] = double2{tw.c[x], -tw.s[x]};  // e^{+2 pi i x / n}
        harness::Dev d_glo(glo.size() * sizeof(double2)), d_tw(twx.size() * sizeof(double2)),
            d_low(std::size_t(oh) * V * sizeof(double2));
        TC_CUDA_CHECK(cudaMemcpy(d_glo.p, glo.data(), glo.size() * sizeof(double2), cudaMemcpyHostToDevice));
        TC_CUDA_CHECK(cudaMemcpy(d_tw.p, twx.data(), twx.size() * sizeof(double2), cudaMemcpyHostToDevice));
        TC_CUDA_CHECK(cudaFuncSetAttribute(fftrows::correlate_down<T, R, WARPS, V>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, int(sm)));
        const auto* glo_p = static_cast<const double2*>(d_glo.p);
        const auto* tw_p = static_cast<const double2*>(d_tw.p);
        auto* low_p = static_cast<double2*>(d_low.p);
        const dim3 cg8 = fftrows::crop_grid(oh, ow, fftrows::crop_blocks<T, V>(0));
        ms = harness::median_ms([&] {
          Ty<T>::fwd(pf, img_p, spec);
          fftrows::correlate_down<T, R, WARPS, V><<<G::grid(int(mc), oh), G::kThreads, sm>>>(
              spec, mc, n, int(mc), taps, mc, kp, o, mc, oh, nullptr, glo_p, low_p, V);
          Ty<T>::inv(pi, o, ws);
          fftrows::crop_low<T, V><<<cg8, fftrows::kCropThreads>>>(ws, n, low_p, tw_p, out, ow, oh, ow, nullptr);
        });
        report("pkg+low8", ms, fetch(out));
        const float c1 = harness::median_ms([&] { crop_dc(ws); });
        const float c8 = harness::median_ms([&] {
          fftrows::crop_low<T, V><<<cg8, fftrows::kCropThreads>>>(ws, n, low_p, tw_p, out, ow, oh, ow, nullptr);
        });
        char buf[160];
        std::snprintf(buf, sizeof buf, "  crop %d k=%d: DC alone %.4f ms, 8 low columns %.4f ms", n, k, c1, c8);
        lines.push_back(buf);
        std::printf("%s\n", buf);
      }
      {  // R2C in fp64 (the image widened), its spectrum rounded to complex64
        harness::Dev d_img64(npx * sizeof(double)), d_spec64(mc * n * sizeof(double2));
        convert<float, double><<<1024, 256>>>(img_p, static_cast<double*>(d_img64.p), npx);
        cufftHandle p64;
        CK(cufftPlanMany(&p64, 1, nn, nullptr, 1, 0, nullptr, 1, 0, CUFFT_D2Z, n));
        CK(cufftExecD2Z(p64, static_cast<double*>(d_img64.p), static_cast<double2*>(d_spec64.p)));
        convert<double2, float2><<<1024, 256>>>(static_cast<double2*>(d_spec64.p), spec, mc * n);
        prod_dc(spec);
        Ty<T>::inv(pi, o, ws);
        crop_dc(ws);
        report("r2c64", 0.f, fetch(out));
        cufftDestroy(p64);
      }
      {  // C2R in fp64 (the product rows widened), crop in float64
        harness::Dev d_o64(mc * std::size_t(oh) * sizeof(double2)),
            d_ws64(std::size_t(n) * oh * sizeof(double)), d_out64(std::size_t(oh) * ow * sizeof(double));
        Ty<T>::fwd(pf, img_p, spec);
        prod_dc(spec);
        convert<float2, double2><<<1024, 256>>>(o, static_cast<double2*>(d_o64.p), mc * oh);
        cufftHandle p64;
        CK(cufftPlanMany(&p64, 1, nn, nullptr, 1, 0, nullptr, 1, 0, CUFFT_Z2D, oh));
        CK(cufftExecZ2D(p64, static_cast<double2*>(d_o64.p), static_cast<double*>(d_ws64.p)));
        fftrows::crop_low<double, 1><<<cg, fftrows::kCropThreads>>>(static_cast<double*>(d_ws64.p), n, dc_p, nullptr,
                                                  static_cast<double*>(d_out64.p), ow, oh, ow,
                                                  nullptr);
        convert<double, float><<<1024, 256>>>(static_cast<double*>(d_out64.p), out, std::int64_t(oh) * ow);
        report("c2r64", 0.f, fetch(out));
        cufftDestroy(p64);
      }
    }
    cufftDestroy(pf);
    cufftDestroy(pi);

    // ---- 2d (fft.cu's direct path) ----
    {
      std::vector<T> kpad(npx, T(0));
      for (int a = 0; a < k; ++a)
        for (int b = 0; b < k; ++b) kpad[std::size_t(a) * n + b] = ker[a * k + b];
      harness::Dev d_k(npx * sizeof(T)), d_ks(mc * n * sizeof(C));
      TC_CUDA_CHECK(cudaMemcpy(d_k.p, kpad.data(), npx * sizeof(T), cudaMemcpyHostToDevice));
      CK(cufftPlan2d(&pf, n, n, Ty<T>::r2c));
      CK(cufftPlan2d(&pi, n, n, Ty<T>::c2r));
      Ty<T>::fwd(pf, static_cast<T*>(d_k.p), static_cast<C*>(d_ks.p));
      std::vector<C> ks(mc * n);
      TC_CUDA_CHECK(cudaMemcpy(ks.data(), d_ks.p, ks.size() * sizeof(C), cudaMemcpyDeviceToHost));
      for (auto& z : ks) z = C{T(z.x / (double(n) * n)), T(-z.y / (double(n) * n))};
      TC_CUDA_CHECK(cudaMemcpy(d_ks.p, ks.data(), ks.size() * sizeof(C), cudaMemcpyHostToDevice));
      ms = harness::median_ms([&] {
        Ty<T>::fwd(pf, img_p, spec);
        multiply<C><<<132 * 16, 256>>>(spec, static_cast<C*>(d_ks.p), std::int64_t(mc) * n);
        Ty<T>::inv(pi, spec, ws);
        crop();
      });
      report("2d", ms, fetch(out));
      cufftDestroy(pf);
      cufftDestroy(pi);
    }
    TC_CUDA_CHECK(cudaDeviceSynchronize());
    return first_h;
  }
};

static std::vector<int> ints(const char* s) {
  std::vector<int> v;
  std::stringstream ss(s);
  std::string t;
  while (std::getline(ss, t, ',')) v.push_back(std::atoi(t.c_str()));
  return v;
}

int main(int argc, char** argv) {
  const std::vector<int> sizes = ints(argc > 1 ? argv[1] : "4096,16384");
  const std::vector<int> ks = ints(argc > 2 ? argv[2] : "3,15,25,35,55");
  const std::string precs = argc > 3 ? argv[3] : "fp32,fp64";
  cudaDeviceProp prop;
  TC_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  int ver = 0;
  cufftGetVersion(&ver);
  std::printf("device %s, cuFFT %d\n", prop.name, ver);
  std::vector<std::string> lines;
  for (int n : sizes) {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u01(0.f, 1.f);
    std::vector<float> im(std::size_t(n) * n);
    for (auto& v : im) v = u01(rng);
    for (int k : ks) {
      std::vector<float> kr(std::size_t(k) * k);
      for (auto& v : kr) v = u01(rng);
      std::vector<double> ref;
      const bool want64 = precs.find("fp64") != std::string::npos;
      if (want64) {
        Run<double> r64(n, k, im, kr);
        std::vector<double> c = r64.go(lines, nullptr);
        ref.assign(c.begin(), c.end());
      }
      if (precs.find("fp32") != std::string::npos) {
        Run<float> r32(n, k, im, kr);
        r32.go(lines, want64 ? &ref : nullptr);
      }
    }
  }
  std::printf("\nsummary\n");
  for (auto& l : lines) std::printf("%s\n", l.c_str());
  return 0;
}
