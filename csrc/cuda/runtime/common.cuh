// Shared CUDA plumbing: error checks that become Python exceptions, RAII device buffers that
// report the bytes they asked for, and CudaPlan, the base of every GPU method (host arrays are
// staged through device buffers; device arrays run in place on the caller's stream).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/registry.hpp"

namespace tc {
namespace cuda {

[[noreturn]] void throw_cuda(cudaError_t e, const char* what, const char* file, int line);

#define TC_CUDA_CHECK(expr)                                                   \
  do {                                                                        \
    cudaError_t tc_err_ = (expr);                                             \
    if (tc_err_ != cudaSuccess)                                               \
      ::tc::cuda::throw_cuda(tc_err_, #expr, __FILE__, __LINE__);             \
  } while (0)

// After every <<<>>> launch: configuration errors show here, faults at the next sync.
#define TC_CUDA_LAUNCH_CHECK() TC_CUDA_CHECK(cudaGetLastError())

// cudaMalloc'd memory; OutOfMemory (-> MemoryError) names the bytes asked for.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) { reset(bytes); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void reset(std::size_t bytes);             // frees, then allocates `bytes` (0: none)
  void ensure(std::size_t bytes) { if (bytes > bytes_) reset(bytes); }
  void upload(const void* host, std::size_t bytes);  // ensure + synchronous copy
  template <class T = void> T* get() const { return static_cast<T*>(ptr_); }
  std::size_t bytes() const { return bytes_; }

 private:
  void release() noexcept;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// A new kernel (plan set_kernel's float64 taps) held on the host until the next call uploads it
// on that call's stream, so replacing a plan's kernel allocates nothing and never synchronises.
// The source is pageable: cudaMemcpyAsync stages it before returning, so it may change after.
class PendingKernel {
 public:
  void set(const double* k, std::size_t n) {
    host_.assign(k, k + n);
    pending_ = true;
  }
  // Copies a pending kernel to `dst` (room for size() doubles) on `stream`; false when none is.
  bool upload(void* dst, cudaStream_t stream) {
    if (!pending_) return false;
    TC_CUDA_CHECK(cudaMemcpyAsync(dst, host_.data(), host_.size() * sizeof(double),
                                  cudaMemcpyHostToDevice, stream));
    pending_ = false;
    return true;
  }
  std::size_t size() const { return host_.size(); }

 private:
  std::vector<double> host_;
  bool pending_ = false;
};

// The fill value as the storage's bit pattern (real storage: f16, f32, f64; 0 otherwise).
std::uint64_t fill_bits(double fill, DType d);

struct HostStager;  // host_pipeline.cu: pinned rings, streams and band plan of host arrays
struct HostStagerDelete {
  void operator()(HostStager* s) const;  // host_pipeline.cu, where the type is complete
};

class CudaPlan : public Plan {
 public:
  explicit CudaPlan(const PlanRequest& r);

 protected:
  // in/out are device arrays; launch on `stream`, check each launch, do not synchronize.
  virtual void run_device(const Tensor2D& in, const Tensor2D& out, cudaStream_t stream) = 0;
  // A device stack (image b at data + b * *_batch_stride elements). Default: run_device image
  // after image on `stream`; a method with a batched launch overrides it.
  virtual void run_device_batch(const Tensor2D& in, std::int64_t in_batch_stride,
                                const Tensor2D& out, std::int64_t out_batch_stride,
                                std::int64_t batch, cudaStream_t stream);
  // Device images in 'same' / 'full' (device_gather): a method that maps the padding as it
  // stages tiles reads the unpadded images g.src (image b at g.src.data + b * g.src_batch_stride
  // elements; padded row r inside the source is row r - g.pad_top, likewise columns) and, outside,
  // the padded rows' and columns' sources (device copies of g.row_src and g.col_src; -1: the
  // fill value, whose storage bits are `fill`), and returns true. Default false: the images are
  // padded into a copy first.
  virtual bool run_device_mapped(const HostGather& g, const std::int64_t* row_src,
                                 const std::int64_t* col_src, std::uint64_t fill,
                                 const Tensor2D& out, std::int64_t out_bstride,
                                 std::int64_t batch, cudaStream_t stream) {
    (void)g, (void)row_src, (void)col_src, (void)fill, (void)out, (void)out_bstride,
        (void)batch, (void)stream;
    return false;
  }
  int device() const { return device_; }
  int sm_count() const { return sm_count_; }
  // The host pipeline's band plan takes the new kernel too (or is dropped with its stager).
  void kernel_replaced(const double* k) override;

 private:
  void run(const Tensor2D& in, const Tensor2D& out, std::uintptr_t stream) final;
  void run_batch(const Tensor2D& in, std::int64_t in_batch_stride, const Tensor2D& out,
                 std::int64_t out_batch_stride, std::int64_t batch,
                 std::uintptr_t stream) final;
  void run_gather(const HostGather& in, const Tensor2D& out, std::int64_t out_batch_stride,
                  std::int64_t batch, std::uintptr_t stream) final;
  void check_device_input(const Tensor2D& in) const;
  // Host arrays (host_pipeline.cu): images, or row bands of large ones, staged through pinned
  // rings on copy streams so H2D, compute and D2H of consecutive chunks overlap.
  void host_pipeline(const HostGather& in, const Tensor2D& out, std::int64_t out_batch_stride,
                     std::int64_t batch, cudaStream_t caller);
  // Device arrays padded by a gather kernel (device_pad.cu) into groups of padded images,
  // each group then run as a stack: one pass over the input instead of fill + copy.
  void device_gather(const HostGather& in, const Tensor2D& out, std::int64_t out_batch_stride,
                     std::int64_t batch, cudaStream_t stream);
  int device_ = 0, sm_count_ = 0;
  std::unique_ptr<HostStager, HostStagerDelete> stager_;  // made at the first host call
  DeviceBuffer pad_group_;    // device_gather's padded images (<= 16 MB or one image)
  DeviceBuffer pad_index_;    // row_src then col_src, on the device
  std::vector<std::int64_t> pad_index_host_;  // what pad_index_ holds
};

// A method whose one launch takes a whole stack (gridDim.z): one image is a stack of one.
class BatchedCudaPlan : public CudaPlan {
 public:
  using CudaPlan::CudaPlan;

 protected:
  void run_device(const Tensor2D& in, const Tensor2D& out, cudaStream_t stream) final {
    run_device_batch(in, 0, out, 0, 1, stream);
  }
  void run_device_batch(const Tensor2D& in, std::int64_t in_batch_stride, const Tensor2D& out,
                        std::int64_t out_batch_stride, std::int64_t batch,
                        cudaStream_t stream) override = 0;
};

inline int ceil_div(std::int64_t a, std::int64_t b) { return static_cast<int>((a + b - 1) / b); }

// Lets `fn` launch with `bytes` of dynamic shared memory on the current device. The limit is
// the function's, process-wide: it is only ever raised (to the largest any plan asked for, each
// of which fit the device), so a plan made later with a smaller need cannot make an earlier,
// cached plan's launches fail. Thread-safe.
void raise_dynamic_smem(const void* fn, std::size_t bytes);
template <class F>
void raise_dynamic_smem(F* fn, std::size_t bytes) {
  raise_dynamic_smem(reinterpret_cast<const void*>(fn), bytes);
}

}  // namespace cuda
}  // namespace tc
