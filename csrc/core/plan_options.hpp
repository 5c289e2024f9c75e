// Typed plan options: the switches that choose among a method's code paths (forms kept so the
// benchmarks can time them side by side, tile overrides that let a sweep or a test reach every
// geometry). Every default is the measured choice; plan_option_table() is the one list of them
// (name, methods, values, default, doc), which Python's tensorconv.plan_options() shows and
// make_plan validates against. Process-wide machine caps (TENSORCONV_FORCE_AVX2/_PORTABLE,
// cpu_features.cpp) are not plan options: they emulate a CPU without an instruction set.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tc {

enum class Tri : int { automatic, off, on };  // a switch whose default the method decides

struct PlanOptions {
  // naive_shmem: coefficients as launch parameters in constant memory instead of shared memory.
  bool naive_shmem_constant = false;
  // naive_shmem: fp32 odd square kernels of 3..17 taps by the variant with the shape compiled in
  // (naive_fixed.cu); automatic: wherever it fits.
  Tri naive_shmem_fixed = Tri::automatic;
  // separable (csrc/cuda/methods/separable/): fused pass where it applies (else the two-pass form),
  // its tensor-core form (automatic: from min_taps() on), the two-pass ring of T rows in MiB,
  // and the fewest output rows a fused block walks (0: as one wave of blocks gives).
  bool separable_fused = true;
  Tri separable_tensor_cores = Tri::automatic;
  std::int64_t separable_band_mb = 1024;
  std::int64_t separable_min_segment_rows = 0;
  // im2tensor (WMMA and mma.sync kernels; 0: the method's choice): P_block width, output rows
  // per block, 128-column passes per CTA of the mma.sync path, WMMA instead of mma.sync.
  int im2tensor_wc = 0, im2tensor_db = 0, im2tensor_passes = 0;
  bool im2tensor_wmma = false;
  // fir (0: the method's choice): output tile columns and rows per CTA.
  int fir_wc = 0, fir_db = 0;
  // fir_ki: the paper's 32x8x16 layout instead of 16x16x16 (Kondo Fig. 2, section IV-B).
  bool fir_ki_32x8 = false;
  // fft (real fp32 / fp64 data): row transforms around a direct product down the columns
  // (fft_rows.cu) or the 2-D transform pair (fft.cu); automatic: rows where the width is a fast
  // transform size and the kernel has <= kFftRowsMaxTaps rows.
  Tri fft_rows = Tri::automatic;
};

// One option's value as it crosses from Python (None, bool, int or str).
struct OptionValue {
  enum Kind { none, boolean, integer, string } kind = none;
  bool b = false;
  std::int64_t i = 0;
  std::string s;
};

struct PlanOptionInfo {
  const char* name;     // "family.option", e.g. "separable.fused"
  const char* methods;  // the methods it applies to, comma-separated
  const char* values;   // the valid values, as Python writes them
  const char* deflt;    // the default, as Python writes it (None: the method's choice)
  const char* doc;
  void (*set)(PlanOptions&, const OptionValue&);  // throws ValueError on a bad value
};

const std::vector<PlanOptionInfo>& plan_option_table();

// Sets option `name` for a plan of `method`. ValueError: an unknown name (listing the valid
// ones), an option of another method, or a bad value (naming the valid ones). None keeps the
// default (a PlanOptions starts at every default and is filled once per plan).
void set_plan_option(PlanOptions& o, const std::string& method, const std::string& name,
                     const OptionValue& v);

}  // namespace tc
