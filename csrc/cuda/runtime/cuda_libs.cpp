// See cuda_libs.hpp. One table (TC_CUDA_LIB_SYMBOLS) names every function the methods call; it
// generates the slots dlsym fills and the forwarders, which are hidden in _core (pybind11's
// default visibility), so another copy of cuFFT or cuBLAS in the process (CuPy, PyTorch) never
// interposes.
#include "cuda/runtime/cuda_libs.hpp"

#include <cublas_v2.h>
#include <cufft.h>
#include <cufftXt.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>

#include "core/types.hpp"

namespace tc {
namespace cuda_libs {
namespace {

// X(library, return type, name, (parameters), (arguments)); cuBLAS's v2 names are the symbols.
#define TC_CUDA_LIB_SYMBOLS(X)                                                                   \
  X(cufft, cufftResult, cufftCreate, (cufftHandle * plan), (plan))                               \
  X(cufft, cufftResult, cufftDestroy, (cufftHandle plan), (plan))                                \
  X(cufft, cufftResult, cufftSetAutoAllocation, (cufftHandle plan, int a), (plan, a))            \
  X(cufft, cufftResult, cufftSetWorkArea, (cufftHandle plan, void* w), (plan, w))                \
  X(cufft, cufftResult, cufftSetStream, (cufftHandle plan, cudaStream_t s), (plan, s))           \
  X(cufft, cufftResult, cufftXtExec, (cufftHandle plan, void* i, void* o, int d), (plan, i, o, d)) \
  X(cufft, cufftResult, cufftXtMakePlanMany,                                                     \
    (cufftHandle plan, int rank, long long* n, long long* inembed, long long istride,            \
     long long idist, cudaDataType itype, long long* onembed, long long ostride,                 \
     long long odist, cudaDataType otype, long long batch, size_t* ws, cudaDataType etype),      \
    (plan, rank, n, inembed, istride, idist, itype, onembed, ostride, odist, otype, batch, ws,   \
     etype))                                                                                     \
  X(cublas, cublasStatus_t, cublasCreate_v2, (cublasHandle_t * h), (h))                          \
  X(cublas, cublasStatus_t, cublasDestroy_v2, (cublasHandle_t h), (h))                           \
  X(cublas, cublasStatus_t, cublasSetStream_v2, (cublasHandle_t h, cudaStream_t s), (h, s))      \
  X(cublas, const char*, cublasGetStatusName, (cublasStatus_t s), (s))                           \
  X(cublas, cublasStatus_t, cublasGemmStridedBatchedEx,                                          \
    (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,          \
     const void* alpha, const void* A, cudaDataType at, int lda, long long sa, const void* B,    \
     cudaDataType bt, int ldb, long long sb, const void* beta, void* C, cudaDataType ct,         \
     int ldc, long long sc, int count, cublasComputeType_t comp, cublasGemmAlgo_t algo),         \
    (h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc, count,     \
     comp, algo))

enum Sym : int {
#define TC_X(lib, ret, name, params, args) k_##name,
  TC_CUDA_LIB_SYMBOLS(TC_X)
#undef TC_X
  kSymbols
};
constexpr CudaLibrary kSymLib[] = {
#define TC_X(lib, ret, name, params, args) CudaLibrary::lib,
    TC_CUDA_LIB_SYMBOLS(TC_X)
#undef TC_X
};
constexpr const char* kSymName[] = {
#define TC_X(lib, ret, name, params, args) #name,
    TC_CUDA_LIB_SYMBOLS(TC_X)
#undef TC_X
};

struct LibSpec {
  const char* soname;
  const char* pip;       // the pip package that ships it (its lib folder: nvidia/cu13/lib)
  const char* needs;     // a library of the same folder to open first ("" none)
};
LibSpec spec(CudaLibrary lib) {
  if (lib == CudaLibrary::cufft)
    return {"libcufft.so.12", "nvidia-cufft (or tensorconv[cuda])", ""};
  return {"libcublas.so.13", "nvidia-cublas (or tensorconv[cublas])", "libcublasLt.so.13"};
}

struct State {
  std::mutex mu;
  std::vector<std::string> dirs;
  struct Lib {
    bool tried = false;
    void* handle = nullptr;
    std::string path, error;
  } lib[3];
  void* slot[kSymbols] = {};
};
State& state() {
  static State s;
  return s;
}

// The search folders: the caller's, then $CUDA_HOME/lib64 and /usr/local/cuda/lib64 (the loader's
// own path goes between them, as a bare soname).
std::vector<std::string> folders(const State& s) {
  std::vector<std::string> f = s.dirs;
  if (const char* h = std::getenv("CUDA_HOME"); h && *h) f.push_back(std::string(h) + "/lib64");
  if (const char* h = std::getenv("CUDA_PATH"); h && *h) f.push_back(std::string(h) + "/lib64");
  f.push_back("/usr/local/cuda/lib64");
  return f;
}

std::string not_found(const LibSpec& sp) {
  return std::string(sp.soname) + " not found (searched the NVIDIA pip wheels' nvidia/cu13/lib, "
         "the loader path, $CUDA_HOME/lib64, /usr/local/cuda/lib64): pip install " + sp.pip;
}

// Opens `lib` once (the caller holds the lock); records the handle or the error.
State::Lib& open_locked(State& s, CudaLibrary lib) {
  State::Lib& L = s.lib[int(lib)];
  if (L.tried) return L;
  L.tried = true;
  const LibSpec sp = spec(lib);
  auto try_open = [&](const std::string& dir) -> bool {
    const std::string p = dir.empty() ? sp.soname : dir + "/" + sp.soname;
    if (!dir.empty() && access(p.c_str(), F_OK) != 0) return false;
    if (*sp.needs && !dir.empty())  // its own RUNPATH finds it too; opening it first is explicit
      dlopen((dir + "/" + sp.needs).c_str(), RTLD_NOW | RTLD_LOCAL);
    dlerror();
    L.handle = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!L.handle) {
      const char* e = dlerror();
      if (!dir.empty() && L.error.empty())  // found but unusable: say why
        L.error = std::string(sp.soname) + " at " + p + " cannot be loaded: " + (e ? e : "?");
      return false;
    }
    L.path = p;
    return true;
  };
  std::vector<std::string> f = folders(s);
  f.insert(f.begin() + static_cast<std::ptrdiff_t>(s.dirs.size()), std::string());
  for (const auto& d : f)
    if (try_open(d)) break;
  if (!L.handle) {
    if (L.error.empty()) L.error = not_found(sp);
    return L;
  }
  if (L.path == sp.soname) {  // from the loader's path: name the file it chose
    char buf[4096];
    if (dlinfo(L.handle, RTLD_DI_ORIGIN, buf) == 0) L.path = std::string(buf) + "/" + sp.soname;
  }
  for (int i = 0; i < kSymbols; ++i) {
    if (kSymLib[i] != lib) continue;
    s.slot[i] = dlsym(L.handle, kSymName[i]);
    if (!s.slot[i]) {
      L.error = std::string(sp.soname) + " at " + L.path + " lacks " + kSymName[i] +
                " (an older release?): pip install -U " + sp.pip;
      dlclose(L.handle);
      L.handle = nullptr;
      return L;
    }
  }
  return L;
}

void* resolve(int sym) {
  State& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  State::Lib& L = open_locked(s, kSymLib[sym]);
  if (!L.handle) throw DeviceError(L.error);
  return s.slot[sym];
}

}  // namespace

void set_search_dirs(std::vector<std::string> dirs) {
  State& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  s.dirs = std::move(dirs);
}

std::string unavailable_reason(CudaLibrary lib) {
  if (lib == CudaLibrary::none) return "";
  State& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  State::Lib& L = s.lib[int(lib)];
  if (L.tried) return L.handle ? "" : L.error;
  const LibSpec sp = spec(lib);
  for (const auto& d : folders(s))
    if (access((d + "/" + sp.soname).c_str(), F_OK) == 0) return "";  // opened at first use
  if (const char* ld = std::getenv("LD_LIBRARY_PATH")) {
    std::string p = ld;
    for (std::size_t a = 0, b; a <= p.size(); a = b + 1) {
      b = p.find(':', a);
      if (b == std::string::npos) b = p.size();
      if (b > a && access((p.substr(a, b - a) + "/" + sp.soname).c_str(), F_OK) == 0) return "";
    }
  }
  State::Lib& opened = open_locked(s, lib);  // only the system's own folders are left
  return opened.handle ? "" : opened.error;
}

std::string loaded_path(CudaLibrary lib) {
  State& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  const State::Lib& L = s.lib[int(lib)];
  return L.handle ? L.path : "";
}

}  // namespace cuda_libs
}  // namespace tc

// The forwarders: the declarations are cufft.h's, cufftXt.h's and cublas_api.h's.
extern "C" {
#define TC_X(lib, ret, name, params, args)                                          \
  ret name params {                                                                  \
    using Fn = ret(*) params;                                                        \
    return reinterpret_cast<Fn>(::tc::cuda_libs::resolve(::tc::cuda_libs::k_##name)) args; \
  }
TC_CUDA_LIB_SYMBOLS(TC_X)
#undef TC_X
}
