#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "core/half.hpp"
#include "cuda/runtime/common.cuh"

namespace tc {
namespace cuda {

void throw_cuda(cudaError_t e, const char* what, const char* file, int line) {
  cudaGetLastError();  // clear non-sticky errors so the next call starts clean
  std::string msg = std::string("CUDA error ") + cudaGetErrorName(e) + ": " +
                    cudaGetErrorString(e) + " (" + what + " at " + file + ":" +
                    std::to_string(line) + ")";
  if (e == cudaErrorMemoryAllocation) throw OutOfMemory(msg);
  throw DeviceError(msg);
}

void raise_dynamic_smem(const void* fn, std::size_t bytes) {
  static std::mutex m;
  static std::map<std::pair<int, const void*>, std::size_t> set;  // (device, fn) -> limit
  int dev = 0;
  TC_CUDA_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(m);
  std::size_t& have = set[{dev, fn}];
  if (bytes <= have || bytes <= 48 * 1024) return;  // (48 KB: every kernel's default)
  TC_CUDA_CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(bytes)));
  have = bytes;
}

// The fill value as the storage's bit pattern (real storage).
std::uint64_t fill_bits(double fill, DType d) {
  std::uint64_t bits = 0;
  if (d == DType::f16) {
    const std::uint16_t h = float_to_half(static_cast<float>(fill));
    std::memcpy(&bits, &h, 2);
  } else if (d == DType::f32) {
    const float f = static_cast<float>(fill);
    std::memcpy(&bits, &f, 4);
  } else if (d == DType::f64) {
    std::memcpy(&bits, &fill, 8);
  }  // complex storage is never padded by a gather (Plan::execute_gather refuses it)
  return bits;
}


DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    release();
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void DeviceBuffer::release() noexcept {
  if (ptr_) cudaFree(ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
}

void DeviceBuffer::reset(std::size_t bytes) {
  release();
  if (bytes == 0) return;
  cudaError_t e = cudaMalloc(&ptr_, bytes);
  if (e != cudaSuccess) {
    ptr_ = nullptr;
    cudaGetLastError();
    std::size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    if (e == cudaErrorMemoryAllocation)
      throw OutOfMemory("out of device memory: asked for " + std::to_string(bytes) +
                        " bytes, " + std::to_string(free_b) + " of " + std::to_string(total_b) +
                        " free");
    throw_cuda(e, "cudaMalloc", __FILE__, __LINE__);
  }
  bytes_ = bytes;
}

void DeviceBuffer::upload(const void* host, std::size_t bytes) {
  ensure(bytes);
  TC_CUDA_CHECK(cudaMemcpy(ptr_, host, bytes, cudaMemcpyHostToDevice));
}

CudaPlan::CudaPlan(const PlanRequest& r) : Plan(r) {
  TC_CUDA_CHECK(cudaGetDevice(&device_));
  TC_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device_));
}

void CudaPlan::check_device_input(const Tensor2D& in) const {
  cudaPointerAttributes attr{};
  TC_CUDA_CHECK(cudaPointerGetAttributes(&attr, in.data));
  if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged)
    throw ValueError("input marked as device memory is not CUDA device memory");
  if (attr.device != device_)
    throw ValueError("input is on CUDA device " + std::to_string(attr.device) +
                     " but the plan was made on device " + std::to_string(device_));
}

namespace {
// The plan's device is current for the call; the caller's device comes back afterwards.
struct DeviceScope {
  int prev = 0;
  explicit DeviceScope(int dev) {
    TC_CUDA_CHECK(cudaGetDevice(&prev));
    if (prev != dev) TC_CUDA_CHECK(cudaSetDevice(dev));
  }
  ~DeviceScope() { cudaSetDevice(prev); }
};

HostGather whole(const Tensor2D& in, std::int64_t batch_stride) {
  HostGather g;  // no padding: every padded row and column is inside the source
  g.src = in;
  g.src_batch_stride = batch_stride;
  return g;
}
}  // namespace

void CudaPlan::run(const Tensor2D& in, const Tensor2D& out, std::uintptr_t stream_id) {
  auto stream = reinterpret_cast<cudaStream_t>(stream_id);
  DeviceScope scope(device_);
  if (in.on_device) {
    check_device_input(in);
    run_device(in, out, stream);
    return;
  }
  host_pipeline(whole(in, 0), out, 0, 1, stream);
}

void CudaPlan::run_batch(const Tensor2D& in, std::int64_t in_batch_stride, const Tensor2D& out,
                         std::int64_t out_batch_stride, std::int64_t batch,
                         std::uintptr_t stream_id) {
  auto stream = reinterpret_cast<cudaStream_t>(stream_id);
  DeviceScope scope(device_);
  if (in.on_device) {
    check_device_input(in);
    run_device_batch(in, in_batch_stride, out, out_batch_stride, batch, stream);
    return;
  }
  // the pipeline runs chunks of the stack, which would restart the kernels at each chunk
  if (kernels_ > 1)
    throw ValueError("per-image kernels on a CUDA method take device arrays (host stacks run "
                     "one plan per kernel)");
  host_pipeline(whole(in, in_batch_stride), out, out_batch_stride, batch, stream);
}

void CudaPlan::run_gather(const HostGather& in, const Tensor2D& out,
                          std::int64_t out_batch_stride, std::int64_t batch,
                          std::uintptr_t stream_id) {
  DeviceScope scope(device_);
  if (in.src.on_device) {
    check_device_input(in.src);
    device_gather(in, out, out_batch_stride, batch, reinterpret_cast<cudaStream_t>(stream_id));
    return;
  }
  host_pipeline(in, out, out_batch_stride, batch, reinterpret_cast<cudaStream_t>(stream_id));
}

void CudaPlan::run_device_batch(const Tensor2D& in, std::int64_t in_batch_stride,
                                const Tensor2D& out, std::int64_t out_batch_stride,
                                std::int64_t batch, cudaStream_t stream) {
  const std::size_t es = dtype_size(in.dtype);
  for (std::int64_t b = 0; b < batch; ++b) {
    Tensor2D i = in, o = out;
    i.data = static_cast<char*>(in.data) + b * in_batch_stride * es;
    o.data = static_cast<char*>(out.data) + b * out_batch_stride * es;
    run_device(i, o, stream);
  }
}

}  // namespace cuda
}  // namespace tc
