// The method registry: the one table that names every method, its device, its precisions and
// the factory of its Plan. methods(), dispatch ("auto" included), tests and benchmarks all read it.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "plan_options.hpp"
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
  // Typed switches among the method's code paths (plan_options.hpp); all at their defaults
  // unless the caller set some.
  PlanOptions options;
  // Methods whose row says takes_factors (separable): K = sum_q col[q] row[q]^T, rank terms,
  // col rank x kh and row rank x kw row-major, from LAPACK's SVD on the Python side
  // (tensorconv._factors); nullptr / 0 when not given.
  const double* factor_col = nullptr;
  const double* factor_row = nullptr;
  std::int64_t rank = 0;
  // Per-image kernels (methods whose row says kernel_stack): `kernel` holds kernel_count kernels
  // of kh x kw one after another, and image b of a stack is correlated with kernel
  // b % kernel_count (a (B, H, W) stack with B kernels: image i with kernel i; an (N, C, H, W)
  // depthwise stack flattened to N C images with C kernels: every image of channel c with
  // kernel c). Stacks must then hold a multiple of kernel_count images. 1: one kernel.
  std::int64_t kernel_count = 1;
};

// A host image or (B, H, W) stack padded as it is staged to the device (CUDA plans), so the
// caller never writes a padded copy: padded row r of an image is source row r - pad_top inside
// the source, else row_src[r] (-1: the fill value); columns likewise through col_src. row_src
// and col_src have one entry per padded row / column of the plan's image shape.
struct HostGather {
  Tensor2D src;  // image 0, unpadded, the plan's storage dtype (host, or device: device_pad.cu)
  std::int64_t src_batch_stride = 0;
  const std::int64_t* row_src = nullptr;
  const std::int64_t* col_src = nullptr;
  std::int64_t pad_top = 0, pad_left = 0;
  double fill = 0.0;
  // Several host sources (tensorconv.dask: a chunk's neighbourhood of blocks, so halos are read
  // straight from the neighbours, no concatenated copy): when `blocks` is set, padded row r is
  // local row row_src[r] of block row row_blk[r], padded column c local column col_src[c] of
  // block column col_blk[c] (row_src / col_src -1: the fill value; pad_top / pad_left unused).
  // Block (i, j) starts at blocks[i * block_cols + j]; block_dims[3 * (i * block_cols + j)]
  // holds its rows, cols and row stride (elements). `src` gives the dtype; batch 1.
  const void* const* blocks = nullptr;
  const std::int64_t* block_dims = nullptr;
  std::int64_t block_rows = 0, block_cols = 0;
  const std::int64_t* row_blk = nullptr;
  const std::int64_t* col_blk = nullptr;
};

// Prepared kernel state (+ device workspace) for one kernel, image shape and precision.
// Every method computes only the *valid* correlation: out[i,j] = sum_uv in[i+u, j+v] * k[u,v].
class Plan {
 public:
  explicit Plan(const PlanRequest& r)
      : kh_(r.kh), kw_(r.kw), ih_(r.ih), iw_(r.iw), kernels_(r.kernel_count),
        precision_(r.precision), complex_(r.complex_data) {}
  virtual ~Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;

  // Extra memory the method holds or needs beyond input and output (im2tensor paper Table 4).
  virtual std::size_t workspace_bytes() const { return 0; }

  // Checks shapes and dtypes, then runs. `stream` is a cudaStream_t as an integer (0: default).
  void execute(const Tensor2D& in, const Tensor2D& out, std::uintptr_t stream);
  // A (batch, rows, cols) stack: image b of `in` starts at in.data + b * in_batch_stride
  // elements (likewise `out`); in/out describe image 0. One call for the whole stack, the kernel
  // state shared; batch >= 1.
  void execute_batch(const Tensor2D& in, std::int64_t in_batch_stride, const Tensor2D& out,
                     std::int64_t out_batch_stride, std::int64_t batch, std::uintptr_t stream);
  // Input padded while staged (HostGather), `batch` images: a host image to a host result,
  // or (CUDA plans) a device image to a device result, padded by a gather kernel. CUDA plans
  // only (others: ValueError); the caller pads for them.
  void execute_gather(const HostGather& in, const Tensor2D& out, std::int64_t out_batch_stride,
                      std::int64_t batch, std::uintptr_t stream);

  // Set by make_plan: the same method, kernel and precision over images of `rows` padded rows
  // and the same width (CUDA plans run a large host image as row bands through one of these).
  std::function<std::unique_ptr<Plan>(std::int64_t rows)> remake_for_rows;
  // The kernel remake_for_rows makes its plans from (set by make_plan; replace_kernel keeps it).
  std::shared_ptr<std::vector<double>> kernel_copy;

  // Another real kernel of the plan's shape for a plan of one real kernel (the plan cache's
  // miss on a seen shape): the method re-prepares its kernel state at its next call, on that
  // call's stream, with nothing allocated and no host synchronisation. False, the plan
  // unchanged, where the method cannot (a new plan is then made).
  bool replace_kernel(const double* k);

  std::int64_t in_rows() const { return ih_; }  // the (padded) image shape it was made for
  std::int64_t in_cols() const { return iw_; }
  std::int64_t out_rows() const { return ih_ - kh_ + 1; }
  std::int64_t out_cols() const { return iw_ - kw_ + 1; }
  Precision precision() const { return precision_; }
  bool complex_data() const { return complex_; }
  std::int64_t kernel_count() const { return kernels_; }  // PlanRequest::kernel_count

 protected:
  virtual void run(const Tensor2D& in, const Tensor2D& out, std::uintptr_t stream) = 0;
  // Default: run() image after image (CudaPlan overrides it: one device check, host stacks
  // pipelined through pinned staging, batched launches where a method has them).
  virtual void run_batch(const Tensor2D& in, std::int64_t in_batch_stride, const Tensor2D& out,
                         std::int64_t out_batch_stride, std::int64_t batch,
                         std::uintptr_t stream);
  void check_shapes(const Tensor2D& in, const Tensor2D& out) const;  // execute's checks
  void check_block_gather(const HostGather& in, std::int64_t batch) const;  // execute_gather's
  virtual void run_gather(const HostGather& in, const Tensor2D& out,
                          std::int64_t out_batch_stride, std::int64_t batch,
                          std::uintptr_t stream);
  // replace_kernel's parts: the method's kernel state (default: it cannot), then what the plan
  // keeps besides (CudaPlan: the host pipeline's band plan).
  virtual bool set_kernel(const double* k) { (void)k; return false; }
  virtual void kernel_replaced(const double* k) { (void)k; }
  std::int64_t kh_, kw_, ih_, iw_;
  std::int64_t kernels_;  // kernel_count: image b of a stack takes kernel b % kernels_
  Precision precision_;
  bool complex_;
};

using PlanFactory = std::unique_ptr<Plan> (*)(const PlanRequest&);

// A CUDA library a method calls, opened at run time (csrc/cuda/runtime/cuda_libs.cpp), never
// linked: without it the method is unavailable with a reason that names the pip package.
enum class CudaLibrary : int { none, cufft, cublas };

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
  // Needs PlanRequest's rank factors of the kernel (python/tensorconv/_factors.py makes them).
  bool takes_factors = false;
  // Every output is the same arithmetic (same operations, same order) wherever it sits in the
  // image, so a tile of the image (tensorconv.dask's chunks) gives the one-call result bit for
  // bit. False where the summation depends on position (transforms, tensor-core tiles, atomics).
  bool translation_invariant = false;
  // For a translation_invariant method: the (rows, columns) whose multiples its bits hold under
  // for this precision and kernel shape; nullptr: (1, 1), any translation. exact_note says when
  // it is not (1, 1), for methods().
  std::pair<int, int> (*translation_period)(Precision, int kh, int kw, bool complex_data) = nullptr;
  const char* exact_note = nullptr;
  // Takes a stack of per-image kernels in one plan (PlanRequest::kernel_count > 1) and runs a
  // stack of images with them in one call; other methods get per-image kernels from Python as
  // one plan per kernel (tensorconv._perimage).
  bool kernel_stack = false;
  // The CUDA library its plans call (cuFFT, cuBLAS), or none.
  CudaLibrary library = CudaLibrary::none;
  // A precision's own minimum compute capability where it is above min_compute_capability
  // (e.g. toeplitz_tc's fp32 and fp64 on sm_90's f64 mma shapes); nullptr: none is.
  int (*precision_min_cc)(Precision) = nullptr;
  // How 'same' / 'full' reach a device image: nullptr, a padded copy (device_pad.cu); else how
  // the method maps the padding itself (CudaPlan::run_device_mapped), for methods().
  const char* boundaries = nullptr;
};

const std::vector<MethodInfo>& registry();

// One method as methods() shows it here: MethodInfo's names resolved, its availability on this
// machine and its run-time note. Python's MethodInfo (python/tensorconv/methods.py) is built from
// these members by name, so a new column is a member here, its binding and one line there.
struct MethodRow {
  std::string name, device;
  std::vector<std::string> precisions;
  bool available = false;
  std::string reason;  // why it is unavailable here; "" when available
  std::string summary;
  std::string entry;  // entry_point, else "correlate2d"
  std::string note;
  bool complex_native = false, takes_factors = false, translation_invariant = false;
  std::string exact_note;
  bool kernel_stack = false;
  int min_compute_capability = 0;
  // Precisions needing a newer GPU than min_compute_capability, and which; those this device
  // (or this build's code for it) cannot run are left out of `precisions`.
  std::vector<std::pair<std::string, int>> precision_min_cc;
  std::string boundaries;  // MethodInfo::boundaries, else "padded copy" (CUDA) or "" (CPU)
};
MethodRow method_row(const MethodInfo& m);
const MethodInfo& find_method(const std::string& name);  // ValueError listing the names
// (1, 1) unless the method's translation_period says otherwise.
std::pair<int, int> translation_period(const MethodInfo& m, Precision p, int kh, int kw,
                                       bool complex_data);
std::string unavailable_reason(const MethodInfo& m);     // "" when it can run here
// "" when the device (and this build's code for it) runs precision p of an available method.
std::string precision_unavailable_reason(const MethodInfo& m, Precision p);
bool supports(const MethodInfo& m, Precision p);

// Validates method, precision, availability and shapes, then calls the factory.
std::unique_ptr<Plan> make_plan(const std::string& method, const PlanRequest& request);
// A kernel with no Plan that its entry point's binding launches itself (separable_boundary for
// filters.gaussian, nan_interp_cpu / nan_interp_cuda for astropy.convolve): the row must be that
// entry's, take the data's precision and run here, else a ValueError naming which not.
const MethodInfo& entry_kernel(const std::string& method, const std::string& entry, DType data);
// The same for a method with its own entry point (e.g. filters.bilateral): `entry` must be it.
std::unique_ptr<Plan> make_entry_plan(const std::string& method, const std::string& entry,
                                      const PlanRequest& request);

// Runtime probes (never throw).
bool built_with_cuda();
bool cuda_available();
std::string cuda_unavailable_reason();  // "" when a device is usable
int cuda_compute_capability();          // of the current device, 0 when none
std::string cuda_device_name();         // of the current device, "" when none
// The architecture this build's code for the current device was compiled for (e.g. 80 when the
// driver runs compute_80 PTX on a Hopper, CUDA_FORCE_PTX_JIT=1 included): code compiled only
// `#if __CUDA_ARCH__ >= 900` is absent below 90. 0 when no device is usable.
int cuda_code_arch();
// The current device's SM count, SM clock and memory bandwidth (from its memory clock and bus
// width): 'auto' scales a cost model measured on another GPU by them. Zeros when none.
struct DeviceSpeed {
  int sm_count = 0;
  double sm_clock_mhz = 0, memory_bandwidth_gbs = 0;
};
DeviceSpeed cuda_device_speed();
// "" when `lib` can be opened (none: always), else why not, naming its pip package.
std::string cuda_library_unavailable_reason(CudaLibrary lib);
// Where `lib` was opened from, "" before its first use or when it could not be.
std::string cuda_library_path(CudaLibrary lib);
// Folders searched for the CUDA libraries before the system's (the NVIDIA pip wheels').
void set_cuda_library_dirs(std::vector<std::string> dirs);

}  // namespace tc
