// The process-wide registry of shared cuFFT plan groups (cufft_util.cuh: SharedCufft, and the
// rule for their shared work areas).
#include <map>
#include <tuple>
#include <utility>

#include "cuda/runtime/cufft_util.cuh"

namespace tc {
namespace cuda {

bool CufftSpec::operator<(const CufftSpec& o) const {
  return std::make_tuple(rank, n0, n1, idist, odist, batch, int(in), int(out), int(exec)) <
         std::make_tuple(o.rank, o.n0, o.n1, o.idist, o.odist, o.batch, int(o.in), int(o.out),
                         int(o.exec));
}

namespace {

using Key = std::tuple<int, CufftSpec, CufftSpec>;

struct Registry {
  std::mutex mu;
  std::map<Key, std::weak_ptr<SharedCufft>> groups;
  std::size_t created = 0;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: plans may outlive static teardown
  return *r;
}

// One handle of the group: its own plan, no work area of its own (the group's is attached).
cufftHandle make_handle(const CufftSpec& s, std::size_t* ws) {
  cufftHandle h = 0;
  TC_CUFFT_CHECK(cufftCreate(&h));
  cufftResult res = cufftSetAutoAllocation(h, 0);
  if (res == CUFFT_SUCCESS) {
    if (s.rank == 2) {
      long long n[2] = {s.n0, s.n1};
      res = cufftXtMakePlanMany(h, 2, n, nullptr, 1, 0, s.in, nullptr, 1, 0, s.out, s.batch, ws,
                                s.exec);
    } else {
      long long nn[1] = {s.n1}, ie[1] = {s.idist}, oe[1] = {s.odist};
      res = cufftXtMakePlanMany(h, 1, nn, ie, 1, s.idist, s.in, oe, 1, s.odist, s.out, s.batch,
                                ws, s.exec);
    }
  }
  if (res != CUFFT_SUCCESS) {
    cufftDestroy(h);
    throw_cufft(res, "cufftXtMakePlanMany (shared plan)", __FILE__, __LINE__);
  }
  return h;
}

}  // namespace

SharedCufft::SharedCufft(int device, const CufftSpec& a, const CufftSpec& b) {
  (void)device;  // the caller's current device (get's key)
  std::size_t wa = 0, wb = 0;
  a_ = make_handle(a, &wa);
  try {
    if (b.rank != 0) b_ = make_handle(b, &wb);
    work_.reset(std::max<std::size_t>(std::max(wa, wb), 1));  // the two run in turn: one area
    TC_CUFFT_CHECK(cufftSetWorkArea(a_, work_.get()));
    if (b_) TC_CUFFT_CHECK(cufftSetWorkArea(b_, work_.get()));
    TC_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
  } catch (...) {
    if (b_) cufftDestroy(b_);
    cufftDestroy(a_);
    throw;
  }
}

SharedCufft::~SharedCufft() {
  if (done_) cudaEventDestroy(done_);
  if (b_) cufftDestroy(b_);
  if (a_) cufftDestroy(a_);
}

std::shared_ptr<SharedCufft> SharedCufft::get(int device, const CufftSpec& a,
                                              const CufftSpec& b) {
  Registry& r = registry();
  const Key key{device, a, b};
  std::lock_guard<std::mutex> lk(r.mu);
  auto it = r.groups.find(key);
  if (it != r.groups.end()) {
    if (auto g = it->second.lock()) return g;
  }
  // Planning happens under the registry lock: two threads asking for one new shape plan it
  // once. Expired entries of other keys are swept here (the map stays as small as what lives).
  for (auto e = r.groups.begin(); e != r.groups.end();)
    e = e->second.expired() ? r.groups.erase(e) : std::next(e);
  auto g = std::make_shared<SharedCufft>(device, a, b);
  r.groups[key] = g;
  ++r.created;
  return g;
}

std::size_t SharedCufft::live() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  std::size_t n = 0;
  for (auto& e : r.groups) n += !e.second.expired();
  return n;
}

std::size_t SharedCufft::created() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  return r.created;
}

SharedCufft::Use::Use(SharedCufft& g, cudaStream_t stream)
    : g_(g), lock_(g.mu_), stream_(stream) {
  if (g_.used_ && g_.last_ != stream_) TC_CUDA_CHECK(cudaStreamWaitEvent(stream_, g_.done_, 0));
  TC_CUFFT_CHECK(cufftSetStream(g_.a_, stream_));
  if (g_.b_) TC_CUFFT_CHECK(cufftSetStream(g_.b_, stream_));
}

SharedCufft::Use::~Use() {
  // (no throw from a destructor: where the record fails, this use is waited for here, so that
  // nothing is left for the next one to order against; the next CUDA call reports the error)
  if (cudaEventRecord(g_.done_, stream_) == cudaSuccess) {
    g_.last_ = stream_;
    g_.used_ = true;
  } else {
    cudaStreamSynchronize(stream_);
    g_.used_ = false;
  }
}

}  // namespace cuda
}  // namespace tc
