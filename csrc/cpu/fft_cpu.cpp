// CPU `fft_cpu`: the registry Plan around python/tensorconv/_fft_cpu.py, which holds the algorithm
// (pocketfft through scipy.fft: fast sizes, overlap-save blocks, the kernel's spectrum once per
// plan). Keeping the transforms in scipy.fft means the package uses the FFT that NumPy and SciPy
// ship rather than one of its own; scipy.fft releases the GIL inside its transforms and runs them
// on all cores. This file only adapts the Python object to the Plan interface: Plan::execute is
// entered with the GIL released (module.cpp), so run() takes it back for the Python calls.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstring>

#include "../core/factories.hpp"

namespace py = pybind11;

namespace tc {
namespace {

const char* numpy_dtype(DType d) { return dtype_name(d); }  // NumPy's names, complex too

// A NumPy view of a host Tensor2D (no copy: the capsule base only marks the memory as borrowed).
py::array view(const Tensor2D& t) {
  const py::dtype dt(numpy_dtype(t.dtype));
  const auto isz = static_cast<py::ssize_t>(dt.itemsize());
  return py::array(dt, {t.rows, t.cols}, {t.row_stride * isz, isz}, t.data,
                   py::capsule(t.data, [](void*) {}));
}

class FftCpuPlan final : public Plan {
 public:
  explicit FftCpuPlan(const PlanRequest& r) : Plan(r) {
    py::gil_scoped_acquire gil;
    py::array_t<double> k({r.kh, r.kw});
    std::memcpy(k.mutable_data(), r.kernel, sizeof(double) * r.kh * r.kw);
    py::object ki = py::none();
    if (r.kernel_imag) {
      py::array_t<double> a({r.kh, r.kw});
      std::memcpy(a.mutable_data(), r.kernel_imag, sizeof(double) * r.kh * r.kw);
      ki = a;
    }
    impl_ = py::module_::import("tensorconv._fft_cpu")
                .attr("FftCpu")(k, r.ih, r.iw, precision_name(r.precision), py::none(), ki,
                                r.complex_data);
  }
  ~FftCpuPlan() override {
    if (!Py_IsInitialized()) {  // interpreter gone: nothing left to release into
      impl_.release();
      return;
    }
    py::gil_scoped_acquire gil;
    impl_ = py::object();
  }
  std::size_t workspace_bytes() const override {
    py::gil_scoped_acquire gil;
    return impl_.attr("workspace_bytes").cast<std::size_t>();
  }

 protected:
  void run(const Tensor2D& in, const Tensor2D& out, std::uintptr_t) override {
    if (in.on_device)
      throw ValueError("method 'fft_cpu' runs on the CPU; pass host (NumPy) arrays, or use "
                       "method 'fft' (cuFFT) for CUDA arrays");
    py::gil_scoped_acquire gil;
    impl_.attr("run")(view(in), view(out));
  }

 private:
  py::object impl_;
};

}  // namespace

std::unique_ptr<Plan> make_fft_cpu_plan(const PlanRequest& r) {
  return std::make_unique<FftCpuPlan>(r);
}

}  // namespace tc
