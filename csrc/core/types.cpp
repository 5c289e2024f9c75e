#include "types.hpp"

namespace tc {

static const char* const kPrecisionNames[] = {"fp16", "fp16fp32", "bf16", "tf32", "fp32", "fp64"};
static_assert(sizeof(kPrecisionNames) / sizeof(kPrecisionNames[0]) ==
                  sizeof(kAllPrecisions) / sizeof(kAllPrecisions[0]),
              "one name per precision");

const char* precision_name(Precision p) { return kPrecisionNames[static_cast<int>(p)]; }

Precision parse_precision(const std::string& name) {
  std::string valid;
  for (Precision p : kAllPrecisions) {
    if (name == precision_name(p)) return p;
    valid += std::string(valid.empty() ? "" : ", ") + precision_name(p);
  }
  throw ValueError("unknown precision '" + name + "'; valid precisions: " + valid);
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

bool has_complex_storage(Precision p) { return p == Precision::fp32 || p == Precision::fp64; }

DType complex_storage_dtype(Precision p) {
  if (p == Precision::fp32) return DType::c64;
  if (p == Precision::fp64) return DType::c128;
  throw ValueError(std::string("complex data needs precision fp32 or fp64, got ") +
                   precision_name(p));
}

std::size_t dtype_size(DType d) {
  switch (d) {
    case DType::f16: return 2;
    case DType::f32: return 4;
    case DType::f64:
    case DType::c64: return 8;
    case DType::c128: return 16;
  }
  return 8;
}
const char* dtype_name(DType d) {
  switch (d) {
    case DType::f16: return "float16";
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::c64: return "complex64";
    case DType::c128: return "complex128";
  }
  return "?";
}
const char* device_name(Device d) { return d == Device::cpu ? "cpu" : "cuda"; }

}  // namespace tc
