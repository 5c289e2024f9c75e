// Shared value types of the C++ core: precisions, storage dtypes, 2-D tensors, errors.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace tc {

// Names and semantics: docs/ARCHITECTURE.md "Precisions".
enum class Precision : int { fp16, fp16fp32, bf16, tf32, fp32, fp64 };
// What crosses the Python boundary. bf16 and tf32 travel as f32 and are rounded on the device;
// complex data (methods that take it natively) travels interleaved as c64 (fp32) or c128 (fp64).
enum class DType : int { f16, f32, f64, c64, c128 };
enum class Device : int { cpu, cuda };
// Every precision and device in enum order: the lists Python reads (tensorconv.PRECISIONS,
// _core.DEVICES), so no other layer spells them out.
inline constexpr Precision kAllPrecisions[] = {Precision::fp16, Precision::fp16fp32,
                                               Precision::bf16, Precision::tf32,
                                               Precision::fp32, Precision::fp64};
inline constexpr Device kAllDevices[] = {Device::cpu, Device::cuda};

const char* precision_name(Precision p);
Precision parse_precision(const std::string& name);  // ValueError listing the valid names
DType storage_dtype(Precision p);
bool has_complex_storage(Precision p);     // fp32 and fp64: complex data as c64 / c128
DType complex_storage_dtype(Precision p);  // c64 for fp32, c128 for fp64; ValueError otherwise
std::size_t dtype_size(DType d);
const char* dtype_name(DType d);
const char* device_name(Device d);

// Row-major 2-D array with unit column stride; row_stride counts elements.
struct Tensor2D {
  void* data = nullptr;
  std::int64_t rows = 0, cols = 0, row_stride = 0;
  DType dtype = DType::f64;
  bool on_device = false;
  template <class T> T* ptr() const { return static_cast<T*>(data); }
  std::size_t bytes() const { return static_cast<std::size_t>(rows * cols) * dtype_size(dtype); }
};

// Errors the bindings translate: ValueError, TypeError, MemoryError, RuntimeError.
struct ValueError : std::invalid_argument { using std::invalid_argument::invalid_argument; };
struct TypeError : std::runtime_error { using std::runtime_error::runtime_error; };
struct OutOfMemory : std::runtime_error { using std::runtime_error::runtime_error; };
struct DeviceError : std::runtime_error { using std::runtime_error::runtime_error; };

}  // namespace tc
