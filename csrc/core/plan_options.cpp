#include "plan_options.hpp"

#include <sstream>

#include "types.hpp"

namespace tc {

namespace {

bool as_bool(const OptionValue& v) {
  if (v.kind != OptionValue::boolean) throw ValueError("expected True or False");
  return v.b;
}

std::int64_t as_int(const OptionValue& v, std::int64_t lo, std::int64_t hi, std::int64_t step) {
  if (v.kind != OptionValue::integer) throw ValueError("expected an integer");
  if (v.i < lo || v.i > hi || v.i % step != 0) throw ValueError("got " + std::to_string(v.i));
  return v.i;
}

// One of the listed strings, else ValueError("expected 'a' or 'b'").
bool is_choice(const OptionValue& v, const char* first, const char* second) {
  if (v.kind != OptionValue::string || (v.s != first && v.s != second))
    throw ValueError(std::string("expected '") + first + "' or '" + second + "'");
  return v.s == second;
}

template <class T>
void set_int(T& field, const OptionValue& v, std::int64_t lo, std::int64_t hi,
             std::int64_t step = 1) {
  field = static_cast<T>(as_int(v, lo, hi, step));
}

}  // namespace

const std::vector<PlanOptionInfo>& plan_option_table() {
  static const std::vector<PlanOptionInfo> table = {
      {"naive_shmem.coefficients", "naive_shmem", "'shared', 'constant'", "'shared'",
       "where the coefficients live: staged per chunk in shared memory, or launch parameters "
       "in constant memory (<= 30 KB; larger kernels stay in shared memory), which stalled on "
       "constant-cache misses on the H100",
       [](PlanOptions& o, const OptionValue& v) {
         o.naive_shmem_constant = is_choice(v, "shared", "constant");
       }},
      {"naive_shmem.fixed", "naive_shmem", "None, True, False", "None",
       "real fp32 with an odd square kernel of 3..17 taps a side: the variant with the kernel's "
       "shape compiled in (taps as FFMA operands, each kernel column summed apart: 1.4-1.8x "
       "faster than the generic kernel on the H100 at 4096^2, and more accurate); None: wherever "
       "it fits; True refuses other plans; False: the generic kernel",
       [](PlanOptions& o, const OptionValue& v) {
         o.naive_shmem_fixed = as_bool(v) ? Tri::on : Tri::off;
       }},
      {"separable.fused", "separable", "True, False", "True",
       "the fused pass (row and column passes in one kernel, T in shared memory) for scalar "
       "precisions and kernels <= 64 taps; False: the two-pass form (T through device memory), "
       "which fp16's half2 lanes and larger kernels always take",
       [](PlanOptions& o, const OptionValue& v) { o.separable_fused = as_bool(v); }},
      {"separable.tensor_cores", "separable", "None, True, False", "None",
       "the fused pass's tensor-core form (tf32: both passes on tf32 MMAs from 13 taps; fp32 "
       "on sm_90: the warp-specialized pass with its column pass on fp64 MMAs from 25 taps); "
       "True / False force either form where the kernel's shape allows it",
       [](PlanOptions& o, const OptionValue& v) {
         o.separable_tensor_cores = as_bool(v) ? Tri::on : Tri::off;
       }},
      {"separable.band_mb", "separable", "1 .. 1048576 (MiB)", "1024",
       "the two-pass form's ring of row-filtered rows is processed in bands of about this size "
       "(smaller bands that keep it in L2 measured slower on the H100)",
       [](PlanOptions& o, const OptionValue& v) { set_int(o.separable_band_mb, v, 1, 1 << 20); }},
      {"separable.min_segment_rows", "separable", "0 .. 2**31 - 1", "0",
       "the fewest output rows one block of the fused pass walks (0: as many as one wave of "
       "blocks gives); larger values reach long walks on small images (tests)",
       [](PlanOptions& o, const OptionValue& v) {
         set_int(o.separable_min_segment_rows, v, 0, 0x7fffffff);
       }},
      {"im2tensor.wc", "im2tensor, im2tensor_shmem, im2tensor_fused, im2tensor_atomic",
       "None or a multiple of the MMA tile width (8 or 16) in 8 .. 1024", "None",
       "P_block width of the WMMA kernels (tuning sweeps: benchmarks/harness/im2tensor_tune.py)",
       [](PlanOptions& o, const OptionValue& v) { set_int(o.im2tensor_wc, v, 8, 1024, 8); }},
      {"im2tensor.db", "im2tensor, im2tensor_shmem, im2tensor_fused, im2tensor_atomic",
       "None or 1 .. 512", "None",
       "output rows per P_block (WMMA kernels) or per CTA (mma.sync path)",
       [](PlanOptions& o, const OptionValue& v) { set_int(o.im2tensor_db, v, 1, 512); }},
      {"im2tensor.passes", "im2tensor_fused, im2tensor_atomic", "None or 1 .. 8", "None",
       "128-column passes per CTA of the mma.sync path (fp16, fp16fp32, bf16, kernels <= 64); "
       "None: 4 for kh <= 16, else 2, fewer where shared memory or the grid needs it",
       [](PlanOptions& o, const OptionValue& v) { set_int(o.im2tensor_passes, v, 1, 8); }},
      {"im2tensor.wmma", "im2tensor_fused, im2tensor_atomic", "True, False", "False",
       "True: the WMMA kernels where the mma.sync path would run (for comparisons)",
       [](PlanOptions& o, const OptionValue& v) { o.im2tensor_wmma = as_bool(v); }},
      {"fir.wc", "fir_kl, fir_ki, fir_ki_32x8, fir_dki", "None or a multiple of 32 in 32 .. 1024",
       "None",
       "output columns per CTA (None: 128; fir_dki 512, or 256 for a 64x64 kernel block or where "
       "512 gives fewer than two CTAs per SM)",
       [](PlanOptions& o, const OptionValue& v) { set_int(o.fir_wc, v, 32, 1024, 32); }},
      {"fir.db", "fir_kl, fir_ki, fir_ki_32x8, fir_dki", "None or 1 .. 256", "None",
       "output rows per CTA (None: 32; fir_dki 64 for a 64x64 kernel block)",
       [](PlanOptions& o, const OptionValue& v) { set_int(o.fir_db, v, 1, 256); }},
      {"fir.layout", "fir_ki", "'16x16x16', '32x8x16'", "'16x16x16'",
       "the WMMA tile shape of kernel-image-loop unrolling (Kondo Fig. 2): 32x8x16 puts 32 "
       "useful pixels in each product's first column instead of 16 (method 'fir_ki_32x8' is "
       "the same plan under its own name)",
       [](PlanOptions& o, const OptionValue& v) {
         o.fir_ki_32x8 = is_choice(v, "16x16x16", "32x8x16");
       }},
      {"fft.layout", "fft", "None, 'rows', '2d'", "None",
       "real fp32 / fp64 images: 'rows' transforms every row (1-D R2C), correlates each "
       "column of the row spectra with the kernel rows' spectra directly (kh complex taps) and "
       "transforms back (1.5-1.9x faster than the 2-D pair on the H100 at 4096^2, k <= 55); '2d' "
       "runs the 2-D transform pair; None: rows where the width is a fast transform size and "
       "kh <= 120 ('rows' on another width transforms rows of the next fast size, the image's "
       "rows copied in with zeros after them). fp16 / fp16fp32 and complex data take the 2-D "
       "pair ('rows' is refused for them)",
       [](PlanOptions& o, const OptionValue& v) {
         o.fft_rows = is_choice(v, "2d", "rows") ? Tri::on : Tri::off;
       }},
  };
  return table;
}

namespace {
bool applies(const char* methods, const std::string& method) {
  std::stringstream ss(methods);
  std::string m;
  while (std::getline(ss, m, ',')) {
    const auto b = m.find_first_not_of(' ');
    if (b != std::string::npos && m.substr(b) == method) return true;
  }
  return false;
}
}  // namespace

void set_plan_option(PlanOptions& o, const std::string& method, const std::string& name,
                     const OptionValue& v) {
  std::string names;
  for (const auto& info : plan_option_table()) {
    if (name != info.name) {
      names += std::string(names.empty() ? "" : ", ") + info.name;
      continue;
    }
    if (!applies(info.methods, method))
      throw ValueError("plan option '" + name + "' applies to " + info.methods + ", not to '" +
                       method + "'");
    if (v.kind == OptionValue::none) return;  // the default: options start at it
    try {
      info.set(o, v);
    } catch (const ValueError& e) {
      throw ValueError("plan option '" + name + "': " + e.what() + "; valid values: " +
                       info.values);
    }
    return;
  }
  throw ValueError("unknown plan option '" + name + "'; valid options: " + names);
}

}  // namespace tc
