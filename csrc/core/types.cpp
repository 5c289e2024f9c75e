#include "types.hpp"

namespace tc {

static const char* const kPrecisionNames[] = {"fp16", "fp16fp32", "bf16", "tf32", "fp32", "fp64"};

const char* precision_name(Precision p) { return kPrecisionNames[static_cast<int>(p)]; }

Precision parse_precision(const std::string& name) {
  for (int i = 0; i < 6; ++i)
    if (name == kPrecisionNames[i]) return static_cast<Precision>(i);
  throw ValueError("unknown precision '" + name +
                   "'; valid precisions: fp16, fp16fp32, bf16, tf32, fp32, fp64");
}

DType storage_dtype(Precision p) {
  switch (p) {
    case Precision::fp16:
    case Precision::fp16fp32: return DType::f16;
    case Precision::bf16:
    case Precision::tf32:
    case Precision::fp32: return DType::f32;
    case Precision::fp64: return DType::f64;
  }
  return DType::f64;
}

std::size_t dtype_size(DType d) { return d == DType::f16 ? 2 : d == DType::f32 ? 4 : 8; }
const char* dtype_name(DType d) { return d == DType::f16 ? "float16" : d == DType::f32 ? "float32" : "float64"; }
const char* device_name(Device d) { return d == Device::cpu ? "cpu" : "cuda"; }

}  // namespace tc
