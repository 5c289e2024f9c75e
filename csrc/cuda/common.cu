#include <string>

#include "common.cuh"

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

void CudaPlan::run(const Tensor2D& in, const Tensor2D& out, std::uintptr_t stream_id) {
  auto stream = reinterpret_cast<cudaStream_t>(stream_id);
  int prev = 0;
  TC_CUDA_CHECK(cudaGetDevice(&prev));
  if (prev != device_) TC_CUDA_CHECK(cudaSetDevice(device_));
  struct Restore {
    int dev;
    ~Restore() { cudaSetDevice(dev); }
  } restore{prev};

  if (in.on_device) {
    cudaPointerAttributes attr{};
    TC_CUDA_CHECK(cudaPointerGetAttributes(&attr, in.data));
    if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged)
      throw ValueError("input marked as device memory is not CUDA device memory");
    if (attr.device != device_)
      throw ValueError("input is on CUDA device " + std::to_string(attr.device) +
                       " but the plan was made on device " + std::to_string(device_));
    run_device(in, out, stream);
    return;
  }
  // Host arrays: stage through reusable device buffers, then wait so the host sees the result.
  const std::size_t es = dtype_size(in.dtype);
  stage_in_.ensure(in.bytes());
  stage_out_.ensure(out.bytes());
  Tensor2D din = in, dout = out;
  din.data = stage_in_.get();
  din.row_stride = in.cols;
  din.on_device = true;
  dout.data = stage_out_.get();
  dout.row_stride = out.cols;
  dout.on_device = true;
  TC_CUDA_CHECK(cudaMemcpy2DAsync(din.data, in.cols * es, in.data, in.row_stride * es,
                                  in.cols * es, in.rows, cudaMemcpyHostToDevice, stream));
  run_device(din, dout, stream);
  TC_CUDA_CHECK(cudaMemcpy2DAsync(out.data, out.row_stride * es, dout.data, out.cols * es,
                                  out.cols * es, out.rows, cudaMemcpyDeviceToHost, stream));
  TC_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace cuda
}  // namespace tc
