// cuFFT and cuBLAS are not linked: cuda_libs.cpp opens them with dlopen at first use and defines
// the few cufft* / cublas* entry points the methods call as forwarders to what it resolved, so
// `import tensorconv` never fails for a missing CUDA library and the methods that need one say
// which (registry.cpp: MethodInfo::library).
#pragma once
#include <string>
#include <vector>

#include "core/registry.hpp"

namespace tc {
namespace cuda_libs {

// Folders searched first, in order (Python passes the NVIDIA pip wheels' nvidia/cu13/lib of
// every site-packages at import); then the loader's own path (LD_LIBRARY_PATH, ld.so.cache),
// $CUDA_HOME/lib64 and /usr/local/cuda/lib64.
void set_search_dirs(std::vector<std::string> dirs);

// "" when the library can be used (it is loaded at the first call of one of its functions),
// else one line naming the library and the pip package that provides it. Cheap: looks for the
// file in the folders above and opens it only when no folder has it.
std::string unavailable_reason(CudaLibrary lib);

// Where the library was loaded from ("" before its first use or when it could not be loaded).
std::string loaded_path(CudaLibrary lib);

}  // namespace cuda_libs
}  // namespace tc
