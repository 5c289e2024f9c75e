#include "registry.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "factories.hpp"
#include "naive_fixed_rule.hpp"

namespace tc {

#ifdef TC_WITH_CUDA
#define TC_CUDA_FACTORY(f) &f
#else
#define TC_CUDA_FACTORY(f) nullptr
#endif

namespace {
using P = Precision;
// fir_ki's two layouts are two rows; the note in methods_table() says how to pick.
std::string fir_ki_note() {
  return "layout 16x16x16; options={'fir.layout': '32x8x16'} (or method='fir_ki_32x8') for 32x8x16";
}
std::string fir_ki_32x8_note() { return "layout 32x8x16; method='fir_ki' for 16x16x16"; }
// toeplitz_tc's fp32 and fp64 run on the f64 mma shapes (m16n8k8) that sm_90 added; its fp16,
// bf16 and tf32 shapes are sm_80's.
int toeplitz_tc_min_cc(Precision p) { return p == P::fp32 || p == P::fp64 ? 90 : 80; }
// naive_shmem's fixed fp32 variant pairs output rows for Winograd at k = 9 and 15 (complex data
// too: it runs as real correlations of the parts).
std::pair<int, int> naive_shmem_period(Precision p, int kh, int kw, bool /*complex_data*/) {
  const bool wino = p == P::fp32 && kh == kw && naive_fixed_winograd(kh);
  return {wino ? 2 : 1, 1};
}
}

// The one table. Order matters only for listing; "auto" ranks methods in Python (_api.py).
const std::vector<MethodInfo>& registry() {
  static const std::vector<MethodInfo> table = {
      {"direct", Device::cpu, {P::fp16fp32, P::fp32, P::fp64}, 0, &make_direct_plan,
       "CPU direct correlation, threads over rows, register-blocked AVX-512 or AVX2/FMA "
       "kernels (portable fallback)",
       nullptr, &direct_note, /*complex_native=*/false, /*takes_factors=*/false,
       /*translation_invariant=*/true, nullptr, nullptr, /*kernel_stack=*/true},
      {"fft_cpu", Device::cpu, {P::fp16fp32, P::fp32, P::fp64}, 0, &make_fft_cpu_plan,
       "CPU product of spectra by pocketfft (scipy.fft, all cores): fast sizes, kernel spectrum "
       "once per plan, overlap-save blocks where cheaper; fp16fp32 transforms in fp32; complex "
       "data by complex transforms",
       nullptr, nullptr, /*complex_native=*/true},
      {"simd_u8", Device::cpu, {}, 0, nullptr,
       "CPU 8-bit integer filtering (Kelefouras 2022, AVX2 maddubs, AVX-512 for sep and pairs; "
       "portable fallback), "
       "OpenCV filter2D semantics",
       "filter2d_u8", &simd_u8_note},
      {"naive", Device::cuda, {P::fp16, P::fp16fp32, P::bf16, P::tf32, P::fp32, P::fp64}, 60,
       TC_CUDA_FACTORY(make_naive_plan),
       "CUDA, one thread per output pixel (two in a half2 for fp16), image and kernel from global "
       "memory (im2tensor paper's \"naive\")",
       nullptr, nullptr, /*complex_native=*/false, /*takes_factors=*/false,
       /*translation_invariant=*/true},
      {"naive_shmem", Device::cuda, {P::fp16, P::fp16fp32, P::bf16, P::tf32, P::fp32, P::fp64},
       60, TC_CUDA_FACTORY(make_naive_shmem_plan),
       "CUDA, image tile + apron and kernel chunks in shared memory (constant memory optional), "
       "register sliding window; any kernel size (im2tensor paper's \"naive + shmem\"); fp32 "
       "odd square kernels of 3..17 taps with the shape compiled in",
       nullptr, nullptr, /*complex_native=*/false, /*takes_factors=*/false,
       /*translation_invariant=*/true, &naive_shmem_period,
       "even row translations at fp32 9x9, 15x15: Winograd row pairs", /*kernel_stack=*/true,
       CudaLibrary::none, nullptr,
       "in the method: tiles staged from the unpadded image through the padding's indices "
       "(fp32 odd square 3..17, the fixed-shape variant: a padded copy)"},
      {"separable", Device::cuda, {P::fp16, P::fp16fp32, P::bf16, P::tf32, P::fp32, P::fp64}, 60,
       TC_CUDA_FACTORY(make_separable_plan),
       "CUDA row + column passes in shared memory (Podlozhnyuk); rank-r kernels as r passes "
       "(SVD rank with a precision-aware tolerance), exact for any kernel",
       nullptr, nullptr, /*complex_native=*/false, /*takes_factors=*/true},
      {"fft", Device::cuda, {P::fp16, P::fp16fp32, P::fp32, P::fp64}, 60,
       TC_CUDA_FACTORY(make_fft_plan),
       "cuFFT R2C/C2R product of spectra, fast transform sizes, kernel spectrum once per plan; "
       "fp16 via cufftXt half (power-of-two sizes), fp16fp32 transforms in fp32; complex data "
       "by C2C transforms; per-image kernels as batched transforms of the kernels' spectra "
       "(real fp16fp32/fp32/fp64 device stacks)",
       nullptr, nullptr, /*complex_native=*/true, /*takes_factors=*/false,
       /*translation_invariant=*/false, nullptr, nullptr, /*kernel_stack=*/true,
       CudaLibrary::cufft},
      // im2tensor (Seznec et al. 2022), csrc/cuda/methods/im2tensor/. sm_80: bf16, tf32 and DMMA WMMA.
      {"im2tensor", Device::cuda, {P::fp16, P::fp16fp32, P::bf16, P::tf32, P::fp32, P::fp64}, 80,
       TC_CUDA_FACTORY(make_im2tensor_plan),
       "im2tensor Alg. 1: P = K^T S on tensor cores, S rows read from global, then Tr+ pass"},
      {"im2tensor_shmem", Device::cuda,
       {P::fp16, P::fp16fp32, P::bf16, P::tf32, P::fp32, P::fp64}, 80,
       TC_CUDA_FACTORY(make_im2tensor_shmem_plan),
       "im2tensor with K and S blocks staged in shared memory, then Tr+ pass"},
      {"im2tensor_fused", Device::cuda,
       {P::fp16, P::fp16fp32, P::bf16, P::tf32, P::fp32, P::fp64}, 80,
       TC_CUDA_FACTORY(make_im2tensor_fused_plan),
       "im2tensor Alg. 2: in-block diagonal sums, shared partial-sum rows, recombination"},
      {"im2tensor_atomic", Device::cuda,
       {P::fp16, P::fp16fp32, P::bf16, P::tf32, P::fp32, P::fp64}, 80,
       TC_CUDA_FACTORY(make_im2tensor_atomic_plan),
       "im2tensor fused with atomic accumulation into the output, no workspace"},
      {"im2tensor_cublas", Device::cuda,
       {P::fp16, P::fp16fp32, P::bf16, P::tf32, P::fp32, P::fp64}, 80,
       TC_CUDA_FACTORY(make_im2tensor_cublas_plan),
       "im2tensor reference: explicit S, cuBLAS strided batched GEMM, Tr+ pass",
       nullptr, nullptr, /*complex_native=*/false, /*takes_factors=*/false,
       /*translation_invariant=*/false, nullptr, nullptr, /*kernel_stack=*/false,
       CudaLibrary::cublas},
      // Bilateral filter (Kondo et al. 2022's LTV case): not linear, so reached only through
      // tensorconv.filters.bilateral (csrc/cpu/bilateral.cpp, csrc/cuda/methods/bilateral/).
      {"bilateral_cpu", Device::cpu, {P::fp32, P::fp64}, 0, &make_bilateral_cpu_plan,
       "CPU bilateral filter, threads over rows, one exp2 per tap (square window)",
       "filters.bilateral"},
      {"bilateral_cuda", Device::cuda, {P::fp32, P::fp64}, 60,
       TC_CUDA_FACTORY(make_bilateral_cuda_plan),
       "CUDA-core bilateral filter: image tile in shared memory, one exp2 per tap, "
       "sum of w (q - p) and of w",
       "filters.bilateral"},
      {"bilateral_tc_32x8x16", Device::cuda, {P::fp16fp32}, 80,
       TC_CUDA_FACTORY(make_bilateral_tc_32x8x16_plan),
       "Kondo 2022 kernel-image-loop bilateral on tensor cores, 32x8x16 layout (32 pixels x 16 "
       "taps of range-weighted values times the spatial weights' column; mma.sync)",
       "filters.bilateral"},
      {"bilateral_tc_16x16x16", Device::cuda, {P::fp16fp32}, 80,
       TC_CUDA_FACTORY(make_bilateral_tc_16x16x16_plan),
       "Kondo 2022 kernel-image-loop bilateral on tensor cores, 16x16x16 layout (16 pixels x 16 "
       "taps; mma.sync)",
       "filters.bilateral"},
      // Kernels that are no Plan, launched by their entry point's binding (module.cpp) once its
      // Python function has chosen them: the fused separable filter with scipy.ndimage's
      // boundary modes (csrc/cuda/methods/filters/separable_boundary.hpp), and the finish of
      // astropy's NaN interpolation after a method computed the numerator
      // (csrc/cpu/nan_interp.hpp, csrc/cuda/methods/nan_interp/).
      {"separable_boundary", Device::cuda, {P::fp32, P::fp64}, 60, nullptr,
       "CUDA one-launch separable filter with scipy.ndimage's boundary modes (reflect, mirror, "
       "nearest, wrap, constant) built in: row and column passes of an image tile in shared memory",
       "filters.gaussian"},
      {"nan_interp_cpu", Device::cpu, {P::fp32, P::fp64}, 0, nullptr,
       "CPU NaN interpolation (astropy's nan_treatment='interpolate'): the weight of the invalid "
       "pixels scattered per window, windows that cancel recomputed in astropy's order",
       "astropy.convolve"},
      {"nan_interp_cuda", Device::cuda, {P::fp32, P::fp64}, 60, nullptr,
       "CUDA NaN interpolation (astropy's nan_treatment='interpolate') on device arrays: invalid "
       "pixels marked and their weights scattered on the device, cancelling windows recomputed",
       "astropy.convolve"},
      // Paplinski (1995), csrc/cuda/methods/paplinski/: mma.sync m16n8k16 (sm_80).
      {"convmat", Device::cuda, {P::fp16, P::fp16fp32, P::bf16}, 80,
       TC_CUDA_FACTORY(make_convmat_plan),
       "Paplinski eq. 2: G = lcm(F,r) rcm(H,C) as one GEMM on tensor cores, operand tiles from "
       "the reference mechanisms (eqs. 6-8), zero K-blocks of the band skipped; lcm(H,R) rcm(F,c) "
       "(transposed) when it needs fewer MMAs"},
      {"convmat_rows", Device::cuda, {P::fp16, P::fp16fp32, P::bf16}, 80,
       TC_CUDA_FACTORY(make_convmat_rows_plan),
       "Paplinski section 2 row by row: h . gg, gg read through the pointer matrix p from a "
       "staged strip, 32 output rows per GEMM (the shifted h's as a band) on tensor cores"},
      // Tensor-core FIR (Kondo et al. 2022), csrc/cuda/methods/fir/. mma.sync bf16 needs sm_80.
      {"fir_kl", Device::cuda, {P::fp16, P::fp16fp32, P::bf16}, 80,
       TC_CUDA_FACTORY(make_fir_kl_plan),
       "Kondo Fig. 1 kernel-loop unrolling: D = W^T x patch per pixel, output = trace of D"},
      {"fir_ki", Device::cuda, {P::fp16, P::fp16fp32, P::bf16}, 80,
       TC_CUDA_FACTORY(make_fir_ki_plan),
       "Kondo Fig. 2 kernel-image-loop unrolling, 16x16x16 layout: first row of D = 16 pixels "
       "(fir_ki_32x8 is the 32x8x16 layout)",
       nullptr, &fir_ki_note},
      {"fir_ki_32x8", Device::cuda, {P::fp16, P::fp16fp32, P::bf16}, 80,
       TC_CUDA_FACTORY(make_fir_ki_32x8_plan),
       "Kondo Fig. 2 kernel-image-loop unrolling, 32x8x16 layout: first column of D = 32 pixels",
       nullptr, &fir_ki_32x8_note},
      {"fir_dki", Device::cuda, {P::fp16, P::fp16fp32, P::bf16}, 80,
       TC_CUDA_FACTORY(make_fir_dki_plan),
       "Kondo Fig. 3 diagonal kernel-image-loop unrolling: every diagonal of W^T x patch, "
       "patches at a kernel-width stride"},
      // Paplinski 1995, csrc/cuda/methods/paplinski/. sm_90: fp64 on m16n8k8 DMMA.
      {"toeplitz_tc", Device::cuda, {P::fp16, P::fp16fp32, P::bf16, P::tf32, P::fp32, P::fp64},
       80, TC_CUDA_FACTORY(make_toeplitz_tc_plan),
       "Paplinski's rcm as banded Toeplitz tiles: sum over kernel rows of image rows x band, "
       "accumulated on the tensor cores (mma.sync; fp32 widened to fp64 and fp64 on DMMA)",
       nullptr, nullptr, /*complex_native=*/false, /*takes_factors=*/false,
       /*translation_invariant=*/false, nullptr, nullptr, /*kernel_stack=*/false,
       CudaLibrary::none, &toeplitz_tc_min_cc},
  };
  return table;
}

#undef TC_CUDA_FACTORY

const MethodInfo& find_method(const std::string& name) {
  std::string names;
  for (const auto& m : registry()) {
    if (name == m.name) return m;
    names += names.empty() ? "" : ", ";
    names += m.name;
  }
  throw ValueError("unknown method '" + name + "'; valid methods: auto, " + names);
}

MethodRow method_row(const MethodInfo& m) {
  MethodRow r;
  r.name = m.name;
  r.device = device_name(m.device);
  r.reason = unavailable_reason(m);
  for (auto p : m.precisions) {
    const int cc = m.precision_min_cc ? m.precision_min_cc(p) : 0;
    if (cc > m.min_compute_capability) r.precision_min_cc.emplace_back(precision_name(p), cc);
    if (!r.reason.empty() || precision_unavailable_reason(m, p).empty())
      r.precisions.emplace_back(precision_name(p));
  }
  r.available = r.reason.empty();
  r.summary = m.summary;
  r.entry = m.entry_point ? m.entry_point : "correlate2d";
  r.note = m.note ? m.note() : std::string();
  r.complex_native = m.complex_native;
  r.takes_factors = m.takes_factors;
  r.translation_invariant = m.translation_invariant;
  r.exact_note = m.exact_note ? m.exact_note : "";
  r.kernel_stack = m.kernel_stack;
  r.min_compute_capability = m.min_compute_capability;
  r.boundaries = m.boundaries ? m.boundaries : m.device == Device::cuda ? "padded copy" : "";
  return r;
}

std::pair<int, int> translation_period(const MethodInfo& m, Precision p, int kh, int kw,
                                       bool complex_data) {
  return m.translation_period ? m.translation_period(p, kh, kw, complex_data)
                              : std::pair<int, int>{1, 1};
}

bool supports(const MethodInfo& m, Precision p) {
  for (auto q : m.precisions)
    if (q == p) return true;
  return false;
}

namespace {
// Why code needing compute capability `need` cannot run on this (usable) device: the device is
// older, or this build runs older code on it (PTX); "" when it can.
std::string arch_shortfall(int need) {
  const int cc = cuda_compute_capability();
  if (cc < need)
    return "needs compute capability " + std::to_string(need / 10) + "." +
           std::to_string(need % 10) + ", device has " + std::to_string(cc / 10) + "." +
           std::to_string(cc % 10);
  const int code = cuda_code_arch();
  if (code < need)
    return "needs code compiled for sm_" + std::to_string(need) + ", this build runs compute_" +
           std::to_string(code) + " code on this GPU (PTX; add " + std::to_string(cc) +
           " to CMAKE_CUDA_ARCHITECTURES)";
  return "";
}
}  // namespace

std::string unavailable_reason(const MethodInfo& m) {
  if (m.device == Device::cpu) return m.factory || m.entry_point ? "" : "not built";
  if (!built_with_cuda()) return "tensorconv was built without CUDA (TENSORCONV_CUDA=OFF, or no nvcc at build time)";
  if (!m.factory && !m.entry_point) return "not built";
  std::string why = cuda_unavailable_reason();
  // a missing library is named even without a device, so a machine can be checked before use
  const std::string lib = cuda_library_unavailable_reason(m.library);
  if (!why.empty()) return lib.empty() ? why : why + "; and " + lib;
  if (!lib.empty()) return lib;
  return arch_shortfall(m.min_compute_capability);
}

std::string precision_unavailable_reason(const MethodInfo& m, Precision p) {
  const int need = m.precision_min_cc ? m.precision_min_cc(p) : 0;
  if (need <= m.min_compute_capability || !cuda_available()) return "";
  const std::string why = arch_shortfall(need);
  return why.empty() ? why : precision_name(p) + (" " + why);
}

namespace {
std::unique_ptr<Plan> checked_plan(const MethodInfo& m, const PlanRequest& r) {
  const std::string method = m.name;
  if (!supports(m, r.precision)) {
    std::string ps;
    for (auto q : m.precisions) ps += std::string(ps.empty() ? "" : ", ") + precision_name(q);
    throw ValueError("method '" + method + "' does not support precision '" +
                     precision_name(r.precision) + "'; it supports: " + ps);
  }
  std::string why = unavailable_reason(m);
  if (!why.empty()) throw ValueError("method '" + method + "' is unavailable: " + why);
  why = precision_unavailable_reason(m, r.precision);
  if (!why.empty()) throw ValueError("method '" + method + "' cannot run here: " + why);
  if (!m.factory) throw ValueError("method '" + method + "' has no plan to make here");
  if (!r.kernel || r.kh < 1 || r.kw < 1) throw ValueError("kernel must be non-empty");
  if (r.kernel_count < 1) throw ValueError("kernel_count must be at least 1");
  if (r.kernel_count > 1 && !m.kernel_stack) {
    std::string natives;
    for (const auto& x : registry())
      if (x.kernel_stack) natives += std::string(natives.empty() ? "" : ", ") + x.name;
    throw ValueError("method '" + method + "' takes one kernel per plan; per-image kernels run "
                     "natively on: " + natives + " (tensorconv makes one plan per kernel for "
                     "the others)");
  }
  if (r.kernel_count > 1 && (r.complex_data || r.kernel_imag || m.takes_factors))
    throw ValueError("per-image kernels take real data and real kernels");
  if (r.complex_data && !m.complex_native)
    throw ValueError("method '" + method + "' takes complex data only as real parts (tensorconv's "
                     "Plan decomposes it); it has no complex plan");
  if (r.complex_data) complex_storage_dtype(r.precision);  // ValueError unless fp32 / fp64
  if (m.takes_factors && (!r.factor_col || !r.factor_row || r.rank < 1))
    throw ValueError("method '" + method + "' needs the kernel's rank factors (tensorconv's "
                     "Python layer computes them with numpy.linalg.svd: tensorconv._factors)");
  if (r.ih < r.kh || r.iw < r.kw)
    throw ValueError("image (" + std::to_string(r.ih) + "x" + std::to_string(r.iw) +
                     ") must be at least as large as the kernel (" + std::to_string(r.kh) + "x" +
                     std::to_string(r.kw) + ") for a valid correlation");
  // Shapes no memory holds: refuse them before a method's size arithmetic (workspaces are
  // products of the image, kernel and tile sizes, in size_t) can wrap around.
  const double elems = static_cast<double>(r.ih) * static_cast<double>(r.iw);
  const double widest = static_cast<double>(std::max(r.kh, r.kw));
  if (elems > 0x1p48 || elems * widest * 8.0 > 0x1p62)
    throw ValueError("image (" + std::to_string(r.ih) + "x" + std::to_string(r.iw) + ") with a " +
                     std::to_string(r.kh) + "x" + std::to_string(r.kw) +
                     " kernel is larger than any memory holds (limits: 2^48 image elements, "
                     "2^62 bytes of image x kernel width)");
  std::unique_ptr<Plan> plan = m.factory(r);
  // keep what remaking the plan for another image height needs (the kernel outlives `r`)
  auto k = std::make_shared<std::vector<double>>(r.kernel,
                                                 r.kernel + r.kernel_count * r.kh * r.kw);
  auto ki = std::make_shared<std::vector<double>>();
  if (r.kernel_imag) ki->assign(r.kernel_imag, r.kernel_imag + r.kh * r.kw);
  const PlanFactory factory = m.factory;
  plan->kernel_copy = k;
  plan->remake_for_rows = [factory, r, k, ki](std::int64_t rows) {
    PlanRequest q = r;
    q.kernel = k->data();
    q.kernel_imag = ki->empty() ? nullptr : ki->data();
    q.ih = rows;
    return factory(q);
  };
  return plan;
}
}  // namespace

bool Plan::replace_kernel(const double* k) {
  if (kernels_ != 1 || complex_ || !set_kernel(k)) return false;
  if (kernel_copy) kernel_copy->assign(k, k + kh_ * kw_);
  kernel_replaced(k);
  return true;
}

std::unique_ptr<Plan> make_plan(const std::string& method, const PlanRequest& r) {
  const MethodInfo& m = find_method(method);
  if (m.entry_point)
    throw ValueError("method '" + method + "' is not a correlate2d/convolve2d method (" +
                     m.summary + "); call tensorconv." + m.entry_point + " instead");
  return checked_plan(m, r);
}

const MethodInfo& entry_kernel(const std::string& method, const std::string& entry, DType data) {
  const MethodInfo& m = find_method(method);
  if (!m.entry_point || entry != m.entry_point)
    throw ValueError("method '" + method + "' is not a " + entry + " kernel");
  const Precision p = data == DType::f16   ? Precision::fp16
                      : data == DType::f64 || data == DType::c128 ? Precision::fp64
                                                                  : Precision::fp32;
  // the verdict of each (row, precision) once: the device probe and library checks do not change
  static std::mutex lock;
  static std::map<std::pair<const MethodInfo*, Precision>, std::string> verdicts;
  std::string why;
  {
    std::lock_guard<std::mutex> g(lock);
    auto it = verdicts.find({&m, p});
    if (it == verdicts.end()) {
      std::string v;
      if (!supports(m, p)) {
        std::string ps;
        for (auto q : m.precisions) ps += std::string(ps.empty() ? "" : ", ") + precision_name(q);
        v = "method '" + method + "' does not support precision '" + precision_name(p) +
            "'; it supports: " + ps;
      } else if (std::string u = unavailable_reason(m); !u.empty()) {
        v = "method '" + method + "' is unavailable: " + u;
      }
      it = verdicts.emplace(std::make_pair(&m, p), v).first;
    }
    why = it->second;
  }
  if (!why.empty()) throw ValueError(why);
  return m;
}

std::unique_ptr<Plan> make_entry_plan(const std::string& method, const std::string& entry,
                                      const PlanRequest& r) {
  const MethodInfo& m = find_method(method);
  if (!m.entry_point || entry != m.entry_point)
    throw ValueError("method '" + method + "' is not a " + entry + " method; call tensorconv." +
                     (m.entry_point ? m.entry_point : "correlate2d") + " instead");
  return checked_plan(m, r);
}

void Plan::execute(const Tensor2D& in, const Tensor2D& out, std::uintptr_t stream) {
  check_shapes(in, out);
  if (kernels_ != 1)
    throw ValueError("a plan of " + std::to_string(kernels_) + " per-image kernels takes a "
                     "stack of images (execute_batch)");
  run(in, out, stream);
}

void Plan::execute_batch(const Tensor2D& in, std::int64_t in_batch_stride, const Tensor2D& out,
                         std::int64_t out_batch_stride, std::int64_t batch,
                         std::uintptr_t stream) {
  if (batch < 1) throw ValueError("a stack needs at least one image, got batch=" +
                                  std::to_string(batch));
  check_shapes(in, out);
  if (batch % kernels_ != 0)
    throw ValueError("a plan of " + std::to_string(kernels_) + " per-image kernels takes a "
                     "stack of a multiple of " + std::to_string(kernels_) + " images, got " +
                     std::to_string(batch));
  // images may not overlap within a stack (an output written twice, or an input read as output)
  if (batch > 1 && (in_batch_stride < in.rows * in.row_stride ||
                    out_batch_stride < out.rows * out.row_stride))
    throw ValueError("batch stride smaller than one image");
  run_batch(in, in_batch_stride, out, out_batch_stride, batch, stream);
}

void Plan::run_batch(const Tensor2D& in, std::int64_t in_batch_stride, const Tensor2D& out,
                     std::int64_t out_batch_stride, std::int64_t batch, std::uintptr_t stream) {
  const std::size_t ies = dtype_size(in.dtype), oes = dtype_size(out.dtype);
  for (std::int64_t b = 0; b < batch; ++b) {
    Tensor2D i = in, o = out;
    i.data = static_cast<char*>(in.data) + b * in_batch_stride * ies;
    o.data = static_cast<char*>(out.data) + b * out_batch_stride * oes;
    run(i, o, stream);
  }
}

// A gather from several host blocks (HostGather::blocks): every padded row and column must
// name a block and a local index inside every block it reads.
void Plan::check_block_gather(const HostGather& in, std::int64_t batch) const {
  if (batch != 1 || in.src.on_device)
    throw ValueError("a gather from several blocks takes one host image");
  const std::int64_t nr = in.block_rows, nc = in.block_cols;
  if (nr < 1 || nc < 1 || !in.block_dims || !in.row_blk || !in.col_blk)
    throw ValueError("bad block gather description");
  for (std::int64_t b = 0; b < nr * nc; ++b) {
    const std::int64_t* d = in.block_dims + 3 * b;
    if (!in.blocks[b] || d[0] < 1 || d[1] < 1 || d[2] < d[1])
      throw ValueError("block " + std::to_string(b) + " is empty or has a bad row stride");
  }
  for (std::int64_t r = 0; r < ih_; ++r) {
    const std::int64_t i = in.row_blk[r], s = in.row_src[r];
    if (s == -1) continue;
    if (s < 0 || i < 0 || i >= nr) throw ValueError("row_src / row_blk name no block row");
    for (std::int64_t j = 0; j < nc; ++j)
      if (s >= in.block_dims[3 * (i * nc + j)])
        throw ValueError("row_src holds a row outside its block");
  }
  for (std::int64_t c = 0; c < iw_; ++c) {
    const std::int64_t j = in.col_blk[c], s = in.col_src[c];
    if (s == -1) continue;
    if (s < 0 || j < 0 || j >= nc) throw ValueError("col_src / col_blk name no block column");
    for (std::int64_t i = 0; i < nr; ++i)
      if (s >= in.block_dims[3 * (i * nc + j) + 1])
        throw ValueError("col_src holds a column outside its block");
  }
}

void Plan::execute_gather(const HostGather& in, const Tensor2D& out,
                          std::int64_t out_batch_stride, std::int64_t batch,
                          std::uintptr_t stream) {
  if (batch < 1) throw ValueError("a stack needs at least one image, got batch=" +
                                  std::to_string(batch));
  if (kernels_ != 1)
    throw ValueError("a plan of per-image kernels takes padded images (execute_batch); pad "
                     "them first");
  if (in.src.on_device != out.on_device)
    throw ValueError("a padded gather takes a host image to a host result or a device image "
                     "to a device result, not a mix");
  if (in.src.dtype == DType::c64 || in.src.dtype == DType::c128)
    throw ValueError("padding while staging takes real storage; pad complex data on the host");
  if (in.src.dtype != out.dtype || in.src.rows < 1 || in.src.cols < 1 || !in.row_src ||
      !in.col_src || in.src.row_stride < in.src.cols)
    throw ValueError("bad host gather description");
  if (in.blocks) {
    check_block_gather(in, batch);
  } else {
    if (in.pad_top < 0 || in.pad_left < 0 || in.pad_top + in.src.rows > ih_ ||
        in.pad_left + in.src.cols > iw_)
      throw ValueError("the source image does not fit the plan's padded image shape");
    for (std::int64_t r = 0; r < ih_; ++r)
      if (in.row_src[r] < -1 || in.row_src[r] >= in.src.rows)
        throw ValueError("row_src holds a row outside the source image");
    for (std::int64_t c = 0; c < iw_; ++c)
      if (in.col_src[c] < -1 || in.col_src[c] >= in.src.cols)
        throw ValueError("col_src holds a column outside the source image");
  }
  Tensor2D padded = in.src;
  padded.rows = ih_;
  padded.cols = iw_;
  padded.row_stride = iw_;
  check_shapes(padded, out);
  if (batch > 1 && (in.src_batch_stride < in.src.rows * in.src.row_stride ||
                    out_batch_stride < out.rows * out.row_stride))
    throw ValueError("batch stride smaller than one image");
  run_gather(in, out, out_batch_stride, batch, stream);
}

void Plan::run_gather(const HostGather&, const Tensor2D&, std::int64_t, std::int64_t,
                      std::uintptr_t) {
  throw ValueError("only CUDA plans pad host images while staging them; pad on the host");
}

void Plan::check_shapes(const Tensor2D& in, const Tensor2D& out) const {
  const DType want = complex_ ? complex_storage_dtype(precision_) : storage_dtype(precision_);
  auto shape = [](std::int64_t a, std::int64_t b) {
    return "(" + std::to_string(a) + ", " + std::to_string(b) + ")";
  };
  if (in.dtype != want || out.dtype != want)
    throw TypeError(std::string("precision ") + precision_name(precision_) + " needs " +
                    dtype_name(want) + " input and output, got " + dtype_name(in.dtype) + " and " +
                    dtype_name(out.dtype));
  if (in.rows != ih_ || in.cols != iw_)
    throw ValueError("plan was made for image shape " + shape(ih_, iw_) + ", got " +
                     shape(in.rows, in.cols));
  if (out.rows != out_rows() || out.cols != out_cols())
    throw ValueError("output must have shape " + shape(out_rows(), out_cols()) + ", got " +
                     shape(out.rows, out.cols));
  if (in.row_stride < in.cols || out.row_stride < out.cols)
    throw ValueError("row stride smaller than the row length");
  if (in.on_device != out.on_device)
    throw ValueError("input and output must both be on the host or both on the device");
}

}  // namespace tc
