// The method registry: the one table that names every method, its device, its precisions and
// the factory of its Plan. methods(), dispatch ("auto" included), tests and benchmarks all read it.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "types.hpp"

namespace tc {

// What a factory gets: the kernel (host, float64, row-major, kh x kw, already cast by the caller)
// and the shape of the (already padded) image the plan will run on.
// complex_data: the plan runs on interleaved complex images (complex_storage_dtype), for methods
// whose row says complex_native; kernel_imag is then the kernel's imaginary part (nullptr: 0).
struct PlanRequest {
  const double* kernel = nullptr;
  const double* kernel_imag = nullptr;
  std::int64_t kh = 0, kw = 0;
  std::int64_t ih = 0, iw = 0;
  Precision precision = Precision::fp64;
  bool complex_data = false;
  // Non-linear filters reached through their own entry point (bilateral): the range Gaussian's
  // standard deviation; `kernel` then holds the spatial weights. Unused by correlate2d methods.
  double range_sigma = 0.0;
};

// Prepared kernel state (+ device workspace) for one kernel, image shape and precision.
// Every method computes only the *valid* correlation: out[i,j] = sum_uv in[i+u, j+v] * k[u,v].
class Plan {
 public:
  explicit Plan(const PlanRequest& r)
      : kh_(r.kh), kw_(r.kw), ih_(r.ih), iw_(r.iw), precision_(r.precision),
        complex_(r.complex_data) {}
  virtual ~Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;

  // Extra memory the method holds or needs beyond input and output (im2tensor paper Table 4).
  virtual std::size_t workspace_bytes() const { return 0; }

  // Checks shapes and dtypes, then runs. `stream` is a cudaStream_t as an integer (0: default).
  void execute(const Tensor2D& in, const Tensor2D& out, std::uintptr_t stream);

  std::int64_t out_rows() const { return ih_ - kh_ + 1; }
  std::int64_t out_cols() const { return iw_ - kw_ + 1; }
  Precision precision() const { return precision_; }
  bool complex_data() const { return complex_; }

 protected:
  virtual void run(const Tensor2D& in, const Tensor2D& out, std::uintptr_t stream) = 0;
  std::int64_t kh_, kw_, ih_, iw_;
  Precision precision_;
  bool complex_;
};

using PlanFactory = std::unique_ptr<Plan> (*)(const PlanRequest&);

struct MethodInfo {
  const char* name;
  Device device;
  std::vector<Precision> precisions;
  int min_compute_capability;  // e.g. 80 for DMMA; 0 for CPU methods
  PlanFactory factory;         // nullptr when the build left the method out
  const char* summary;
  // Methods reached through their own function rather than correlate2d/convolve2d (e.g.
  // simd_u8 -> tensorconv.filter2d_u8): the Python entry point; nullptr for correlate2d methods.
  const char* entry_point = nullptr;
  // A run-time note for methods(): which code path runs here and why (never an error).
  std::string (*note)() = nullptr;
  // Takes interleaved complex data itself (PlanRequest::complex_data); other methods get complex
  // data from Python as real correlations of the parts.
  bool complex_native = false;
  // Every output is the same arithmetic (same operations, same order) wherever it sits in the
  // image, so a tile of the image (tensorconv.dask's chunks) gives the one-call result bit for
  // bit. False where the summation depends on position (transforms, tensor-core tiles, atomics).
  bool translation_invariant = false;
};

const std::vector<MethodInfo>& registry();
const MethodInfo& find_method(const std::string& name);  // ValueError listing the names
std::string unavailable_reason(const MethodInfo& m);     // "" when it can run here
bool supports(const MethodInfo& m, Precision p);

// Validates method, precision, availability and shapes, then calls the factory.
std::unique_ptr<Plan> make_plan(const std::string& method, const PlanRequest& request);
// The same for a method with its own entry point (e.g. filters.bilateral): `entry` must be it.
std::unique_ptr<Plan> make_entry_plan(const std::string& method, const std::string& entry,
                                      const PlanRequest& request);

// Runtime probes (never throw).
bool built_with_cuda();
bool cuda_available();
std::string cuda_unavailable_reason();  // "" when a device is usable
int cuda_compute_capability();          // of the current device, 0 when none

}  // namespace tc
