// Thin pybind11 layer over the registry: no logic here beyond argument plumbing.
// Arrays cross as raw pointers + shapes; python/tensorconv/_arrays.py keeps them alive.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <iterator>

#include "core/registry.hpp"
#include "cpu/fma_peak.hpp"
#include "cpu/nan_interp.hpp"
#include "cpu/simd_u8/simd_u8.hpp"
#ifdef TC_WITH_CUDA
#include "cuda/runtime/pinned_pool.hpp"
#endif
#include "cuda/methods/filters/separable_boundary.hpp"

namespace py = pybind11;
using namespace tc;

namespace {

DType parse_dtype(const std::string& s) {
  if (s == "float16") return DType::f16;
  if (s == "float32") return DType::f32;
  if (s == "float64") return DType::f64;
  if (s == "complex64") return DType::c64;
  if (s == "complex128") return DType::c128;
  throw TypeError("unsupported storage dtype '" + s + "'");
}

Tensor2D tensor(std::uintptr_t ptr, std::int64_t rows, std::int64_t cols, std::int64_t stride,
                const std::string& dtype, bool on_device) {
  Tensor2D t;
  t.data = reinterpret_cast<void*>(ptr);
  t.rows = rows;
  t.cols = cols;
  t.row_stride = stride;
  t.dtype = parse_dtype(dtype);
  t.on_device = on_device;
  return t;
}

// The request of a plan over a float64 kernel (kept alive by the caller's array).
PlanRequest plan_request(const py::array_t<double, py::array::c_style | py::array::forcecast>& k,
                         std::int64_t ih, std::int64_t iw, const std::string& precision) {
  // 3-D: a stack of per-image kernels (PlanRequest::kernel_count)
  if (k.ndim() != 2 && k.ndim() != 3) throw ValueError("kernel must be 2-D (or a 3-D stack)");
  PlanRequest r;
  r.kernel = k.data();
  r.kernel_count = k.ndim() == 3 ? k.shape(0) : 1;
  r.kh = k.shape(k.ndim() - 2);
  r.kw = k.shape(k.ndim() - 1);
  r.ih = ih;
  r.iw = iw;
  r.precision = parse_precision(precision);
  return r;
}

// Plan options from a dict {name: None | bool | int | str} (tensorconv._api normalizes NumPy
// scalars first); the core validates names, methods and values.
void set_options(PlanRequest& r, const std::string& method, const py::object& options) {
  if (options.is_none()) return;
  for (auto item : py::cast<py::dict>(options)) {
    const auto name = py::cast<std::string>(item.first);
    const py::handle v = item.second;
    OptionValue ov;
    if (v.is_none()) {
      ov.kind = OptionValue::none;
    } else if (py::isinstance<py::bool_>(v)) {
      ov.kind = OptionValue::boolean;
      ov.b = py::cast<bool>(v);
    } else if (py::isinstance<py::int_>(v)) {
      ov.kind = OptionValue::integer;
      ov.i = py::cast<std::int64_t>(v);
    } else if (py::isinstance<py::str>(v)) {
      ov.kind = OptionValue::string;
      ov.s = py::cast<std::string>(v);
    } else {
      throw TypeError("plan option '" + name + "' must be None, a bool, an int or a str, got " +
                      py::cast<std::string>(py::str(py::type::of(v).attr("__name__"))));
    }
    set_plan_option(r.options, method, name, ov);
  }
}

using F64Array = py::array_t<double, py::array::c_style | py::array::forcecast>;
using I64Array = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;

// Plan.run_batch: a stack whose image b starts b * *_bstride elements after image 0.
void run_stack(Plan& p, std::uintptr_t in_ptr, std::int64_t batch, std::int64_t in_bstride,
               std::int64_t in_rows, std::int64_t in_cols, std::int64_t in_stride,
               std::uintptr_t out_ptr, std::int64_t out_bstride, std::int64_t out_rows,
               std::int64_t out_cols, std::int64_t out_stride, const std::string& dtype,
               bool on_device, std::uintptr_t stream) {
  Tensor2D in = tensor(in_ptr, in_rows, in_cols, in_stride, dtype, on_device);
  Tensor2D out = tensor(out_ptr, out_rows, out_cols, out_stride, dtype, on_device);
  py::gil_scoped_release release;
  p.execute_batch(in, in_bstride, out, out_bstride, batch, stream);
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "tensorconv C++/CUDA core";
  m.attr("WITH_CUDA") = built_with_cuda();
#ifdef TC_CUDA_ARCHS
  m.attr("CUDA_ARCHS") = TC_CUDA_ARCHS;  // CMAKE_CUDA_ARCHITECTURES, comma-separated
#else
  m.attr("CUDA_ARCHS") = "";
#endif

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const tc::TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const tc::OutOfMemory& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    }
  });

  m.def("cuda_available", &cuda_available, "True when a CUDA device can be used (never raises).");
  m.def("cuda_unavailable_reason", &cuda_unavailable_reason);
  m.def("cuda_compute_capability", &cuda_compute_capability);
  m.def(
      "cuda_device_speed",
      [] {
        const DeviceSpeed s = cuda_device_speed();
        py::dict d;
        d["sm_count"] = s.sm_count;
        d["sm_clock_mhz"] = s.sm_clock_mhz;
        d["memory_bandwidth_gbs"] = s.memory_bandwidth_gbs;
        return d;
      },
      "The current device's SM count, SM clock (MHz) and memory bandwidth (GB/s); zeros when "
      "none.");
  m.def("cuda_code_arch", &cuda_code_arch,
        "The architecture this build's code for the current device was compiled for (0: none).");
  m.def(
      "precision_unavailable_reason",
      [](const std::string& method, const std::string& precision) {
        return precision_unavailable_reason(find_method(method), parse_precision(precision));
      },
      "Why this device cannot run `precision` of `method` (\"\" when it can).");
  m.def("cuda_device_name", &cuda_device_name, "Name of the current CUDA device, \"\" when none.");
  m.def("set_cuda_library_dirs", &set_cuda_library_dirs,
        "Folders searched first for cuFFT and cuBLAS (tensorconv/__init__.py passes the NVIDIA "
        "pip wheels' lib folders).");
  m.def(
      "cuda_library_path",
      [](const std::string& lib) {
        if (lib != "cufft" && lib != "cublas") throw ValueError("library: 'cufft' or 'cublas'");
        return cuda_library_path(lib == "cufft" ? CudaLibrary::cufft : CudaLibrary::cublas);
      },
      "Where cuFFT / cuBLAS was loaded from, \"\" before first use or when it could not be.");

  m.def(
      "fma_peak_gflops",
      [](const std::string& precision, int threads, double seconds, const std::string& isa) {
        py::gil_scoped_release release;
        return fma_peak_gflops(precision == "fp64", threads, seconds, isa);
      },
      "Measured FMA peak (GFLOP/s) of a register-only FMA loop on `threads` threads.",
      py::arg("precision") = "fp32", py::arg("threads") = 0, py::arg("seconds") = 0.3,
      py::arg("isa") = "");
  m.def("fma_peak_isa", &fma_peak_isa);

  // Precisions and devices as the core names them: tensorconv.PRECISIONS and every table keyed
  // by precision read these (storage: the dtype a precision's data crosses in; complex_storage:
  // "" where the precision takes no complex data).
  struct PrecisionRow {
    std::string name, storage, complex_storage;
  };
  py::class_<PrecisionRow>(m, "PrecisionRow")
      .def_readonly("name", &PrecisionRow::name)
      .def_readonly("storage", &PrecisionRow::storage)
      .def_readonly("complex_storage", &PrecisionRow::complex_storage);
  m.def("precisions", [] {
    std::vector<PrecisionRow> rows;
    for (Precision p : kAllPrecisions)
      rows.push_back({precision_name(p), dtype_name(storage_dtype(p)),
                      has_complex_storage(p) ? dtype_name(complex_storage_dtype(p)) : ""});
    return rows;
  });
  py::tuple devices(std::size(kAllDevices));
  for (std::size_t i = 0; i < std::size(kAllDevices); ++i) devices[i] = device_name(kAllDevices[i]);
  m.attr("DEVICES") = devices;

  py::class_<MethodRow>(m, "MethodRow")
      .def_readonly("name", &MethodRow::name)
      .def_readonly("device", &MethodRow::device)
      .def_property_readonly("precisions",
                             [](const MethodRow& r) { return py::tuple(py::cast(r.precisions)); })
      .def_readonly("available", &MethodRow::available)
      .def_readonly("reason", &MethodRow::reason)
      .def_readonly("summary", &MethodRow::summary)
      .def_readonly("entry", &MethodRow::entry)
      .def_readonly("note", &MethodRow::note)
      .def_readonly("complex_native", &MethodRow::complex_native)
      .def_readonly("takes_factors", &MethodRow::takes_factors)
      .def_readonly("translation_invariant", &MethodRow::translation_invariant)
      .def_readonly("exact_note", &MethodRow::exact_note)
      .def_readonly("kernel_stack", &MethodRow::kernel_stack)
      .def_readonly("min_compute_capability", &MethodRow::min_compute_capability)
      .def_readonly("boundaries", &MethodRow::boundaries)
      .def_property_readonly("precision_min_cc", [](const MethodRow& r) {
        return py::tuple(py::cast(r.precision_min_cc));  // ((precision, cc), ...)
      });
  m.def("methods", [] {
    std::vector<MethodRow> rows;
    for (const auto& info : registry()) rows.push_back(method_row(info));
    return rows;
  });
  m.def(
      "translation_period",
      [](const std::string& method, const std::string& precision, int kh, int kw,
         bool complex_data) {
        return translation_period(find_method(method), parse_precision(precision), kh, kw,
                                  complex_data);
      },
      "(rows, columns) whose multiples a tile-exact method's bits hold under translations by.",
      py::arg("method"), py::arg("precision"), py::arg("kh"), py::arg("kw"),
      py::arg("complex_data") = false);

  py::class_<PlanOptionInfo>(m, "PlanOptionRow")
      .def_readonly("name", &PlanOptionInfo::name)
      .def_readonly("methods", &PlanOptionInfo::methods)  // comma-separated
      .def_readonly("values", &PlanOptionInfo::values)
      .def_readonly("default", &PlanOptionInfo::deflt)
      .def_readonly("doc", &PlanOptionInfo::doc);
  m.def("plan_options", [] { return plan_option_table(); });

  // simd_u8 (tensorconv.filter2d_u8 validates; this only plumbs arrays and releases the GIL).
  m.def(
      "filter2d_u8",
      [](py::array_t<std::uint8_t, py::array::c_style> image,
         py::array_t<std::int32_t, py::array::c_style | py::array::forcecast> kernel,
         std::int64_t divisor, const std::string& border, int ay, int ax,
         const std::string& algorithm, int threads) {
        if (image.ndim() != 2 || kernel.ndim() != 2)
          throw ValueError("image and kernel must be 2-D");
        const std::int64_t h = image.shape(0), w = image.shape(1);
        const u8::Border b = u8::parse_border(border);
        const std::uint8_t* in = image.data();
        // The output starts at the input's offset within a 64-byte line, so the vector loads
        // and stores of a row can all start lines together (numpy's buffer, a view into it).
        py::array_t<std::uint8_t> buf(h * w + 64);
        const auto lag = (reinterpret_cast<std::uintptr_t>(in) -
                          reinterpret_cast<std::uintptr_t>(buf.data())) & 63;
        py::array_t<std::uint8_t> out({h, w}, {w, std::int64_t{1}}, buf.data() + lag, buf);
        std::uint8_t* o = out.mutable_data();
        const std::int32_t* k = kernel.data();
        const int kh = static_cast<int>(kernel.shape(0)), kw = static_cast<int>(kernel.shape(1));
        {
          py::gil_scoped_release release;
          u8::filter2d(in, h, w, w, o, w, k, kh, kw, divisor, b, ay, ax, algorithm, threads);
        }
        return out;
      },
      py::arg("image"), py::arg("kernel"), py::arg("divisor"), py::arg("border"), py::arg("ay"),
      py::arg("ax"), py::arg("algorithm"), py::arg("threads"));
  m.def(
      "filter2d_u8_info",
      [](py::array_t<std::int32_t, py::array::c_style | py::array::forcecast> kernel,
         std::int64_t divisor, const std::string& algorithm) {
        if (kernel.ndim() != 2) throw ValueError("kernel must be 2-D");
        const u8::Analysis a =
            u8::analyze(kernel.data(), static_cast<int>(kernel.shape(0)),
                        static_cast<int>(kernel.shape(1)), divisor, algorithm, u8::isa_in_use());
        py::dict d;
        d["algorithm"] = u8::algo_name(a.algo);
        d["ir_bits"] = a.ir_bits;
        d["ir_unsigned"] = a.ir_unsigned;
        d["division_case"] = std::string(1, a.div_case);
        d["separable"] = a.separable;
        d["factors"] = a.separable ? py::object(py::make_tuple(a.a, a.b)) : py::object(py::none());
        d["sum_range"] = py::make_tuple(a.sum_min, a.sum_max);
        d["register_blocking"] = a.row_block;
        d["path"] = a.isa;
        d["why"] = a.why;
        return d;
      },
      py::arg("kernel"), py::arg("divisor"), py::arg("algorithm"));

  py::class_<Plan>(m, "Plan")
      .def_property_readonly("workspace_bytes", &Plan::workspace_bytes)
      .def_property_readonly("out_shape",
                             [](const Plan& p) { return py::make_tuple(p.out_rows(), p.out_cols()); })
      .def_property_readonly("precision", [](const Plan& p) { return precision_name(p.precision()); })
      .def_property_readonly("kernel_count", &Plan::kernel_count)
      .def(
          "replace_kernel",
          [](Plan& p, const py::array_t<double, py::array::c_style | py::array::forcecast>& k) {
            const std::int64_t kh = p.in_rows() - p.out_rows() + 1;
            const std::int64_t kw = p.in_cols() - p.out_cols() + 1;
            if (k.ndim() != 2 || k.shape(0) != kh || k.shape(1) != kw)
              throw ValueError("replace_kernel takes a kernel of the plan's shape (" +
                               std::to_string(kh) + ", " + std::to_string(kw) + ")");
            return p.replace_kernel(k.data());
          },
          "Another kernel of the plan's shape (the method re-prepares at its next call); False "
          "where the method cannot.",
          py::arg("kernel"))
      .def(
          "run",
          [](Plan& p, std::uintptr_t in_ptr, std::int64_t in_rows, std::int64_t in_cols,
             std::int64_t in_stride, std::uintptr_t out_ptr, std::int64_t out_rows,
             std::int64_t out_cols, std::int64_t out_stride, const std::string& dtype,
             bool on_device, std::uintptr_t stream) {
            // one image: a stack of one (Plan::execute_batch checks as execute does)
            run_stack(p, in_ptr, 1, 0, in_rows, in_cols, in_stride, out_ptr, 0, out_rows,
                      out_cols, out_stride, dtype, on_device, stream);
          },
          py::arg("in_ptr"), py::arg("in_rows"), py::arg("in_cols"), py::arg("in_stride"),
          py::arg("out_ptr"), py::arg("out_rows"), py::arg("out_cols"), py::arg("out_stride"),
          py::arg("dtype"), py::arg("on_device"), py::arg("stream") = 0)
      .def("run_batch", &run_stack,
           "A (batch, rows, cols) stack in one call; image b starts b * *_bstride elements on.",
           py::arg("in_ptr"), py::arg("batch"), py::arg("in_bstride"), py::arg("in_rows"),
           py::arg("in_cols"), py::arg("in_stride"), py::arg("out_ptr"), py::arg("out_bstride"),
           py::arg("out_rows"), py::arg("out_cols"), py::arg("out_stride"), py::arg("dtype"),
           py::arg("on_device"), py::arg("stream") = 0)
      .def(
          "run_gather",
          [](Plan& p, std::uintptr_t in_ptr, std::int64_t batch, std::int64_t in_bstride,
             std::int64_t in_rows, std::int64_t in_cols, std::int64_t in_stride,
             const py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>& row_src,
             const py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>& col_src,
             std::int64_t pad_top, std::int64_t pad_left, double fill, std::uintptr_t out_ptr,
             std::int64_t out_bstride, std::int64_t out_rows, std::int64_t out_cols,
             std::int64_t out_stride, const std::string& dtype, std::uintptr_t stream,
             bool on_device) {
            HostGather g;
            g.src = tensor(in_ptr, in_rows, in_cols, in_stride, dtype, on_device);
            g.src_batch_stride = in_bstride;
            if (row_src.ndim() != 1 || col_src.ndim() != 1 || row_src.shape(0) != p.in_rows() ||
                col_src.shape(0) != p.in_cols())
              throw ValueError("row_src / col_src must be 1-D, one entry per padded row / column "
                               "of the plan's image shape");
            g.row_src = row_src.data();
            g.col_src = col_src.data();
            g.pad_top = pad_top;
            g.pad_left = pad_left;
            g.fill = fill;
            Tensor2D out = tensor(out_ptr, out_rows, out_cols, out_stride, dtype, on_device);
            py::gil_scoped_release release;
            p.execute_gather(g, out, out_bstride, batch, stream);
          },
          "An image or stack padded as it is staged (host arrays) or gathered on the device "
          "(device arrays, on_device=True) for the method (CUDA plans).",
          py::arg("in_ptr"), py::arg("batch"), py::arg("in_bstride"), py::arg("in_rows"),
          py::arg("in_cols"), py::arg("in_stride"), py::arg("row_src"), py::arg("col_src"),
          py::arg("pad_top"), py::arg("pad_left"), py::arg("fill"), py::arg("out_ptr"),
          py::arg("out_bstride"), py::arg("out_rows"), py::arg("out_cols"),
          py::arg("out_stride"), py::arg("dtype"), py::arg("stream") = 0,
          py::arg("on_device") = false)
      .def(
          "run_gather_blocks",
          [](Plan& p, const I64Array& block_ptrs, const I64Array& block_dims,
             std::int64_t block_rows, std::int64_t block_cols, const I64Array& row_blk,
             const I64Array& row_src, const I64Array& col_blk, const I64Array& col_src,
             double fill, std::uintptr_t out_ptr, std::int64_t out_rows, std::int64_t out_cols,
             std::int64_t out_stride, const std::string& dtype, std::uintptr_t stream) {
            const std::int64_t n = block_rows * block_cols;
            if (block_rows < 1 || block_cols < 1 || block_ptrs.ndim() != 1 ||
                block_ptrs.shape(0) != n || block_dims.ndim() != 1 || block_dims.shape(0) != 3 * n)
              throw ValueError("block_ptrs / block_dims must hold one pointer and (rows, cols, "
                               "row stride) per block of the block_rows x block_cols grid");
            for (const I64Array* a : {&row_blk, &row_src})
              if (a->ndim() != 1 || a->shape(0) != p.in_rows())
                throw ValueError("row_blk / row_src must hold one entry per padded row");
            for (const I64Array* a : {&col_blk, &col_src})
              if (a->ndim() != 1 || a->shape(0) != p.in_cols())
                throw ValueError("col_blk / col_src must hold one entry per padded column");
            std::vector<const void*> ptrs(static_cast<std::size_t>(n));
            for (std::int64_t b = 0; b < n; ++b)
              ptrs[static_cast<std::size_t>(b)] =
                  reinterpret_cast<const void*>(static_cast<std::uintptr_t>(block_ptrs.data()[b]));
            const std::int64_t* d = block_dims.data();
            HostGather g;  // src: block 0, for the dtype and the host/device check
            g.src = tensor(static_cast<std::uintptr_t>(block_ptrs.data()[0]), d[0], d[1], d[2],
                           dtype, false);
            g.blocks = ptrs.data();
            g.block_dims = d;
            g.block_rows = block_rows;
            g.block_cols = block_cols;
            g.row_blk = row_blk.data();
            g.row_src = row_src.data();
            g.col_blk = col_blk.data();
            g.col_src = col_src.data();
            g.fill = fill;
            Tensor2D out = tensor(out_ptr, out_rows, out_cols, out_stride, dtype, false);
            py::gil_scoped_release release;
            p.execute_gather(g, out, 0, 1, stream);
          },
          "A host image padded as it is staged from a grid of host blocks (tensorconv.dask: a "
          "chunk and its neighbours): padded row r is local row row_src[r] of block row "
          "row_blk[r], columns likewise (-1: the fill value). CUDA plans.",
          py::arg("block_ptrs"), py::arg("block_dims"), py::arg("block_rows"),
          py::arg("block_cols"), py::arg("row_blk"), py::arg("row_src"), py::arg("col_blk"),
          py::arg("col_src"), py::arg("fill"), py::arg("out_ptr"), py::arg("out_rows"),
          py::arg("out_cols"), py::arg("out_stride"), py::arg("dtype"), py::arg("stream") = 0);

  m.def(
      "make_plan",
      [](const std::string& method,
         py::array_t<double, py::array::c_style | py::array::forcecast> kernel, std::int64_t ih,
         std::int64_t iw, const std::string& precision, py::object kernel_imag,
         bool complex_data, py::object options, py::object factors) {
        PlanRequest r = plan_request(kernel, ih, iw, precision);
        set_options(r, method, options);
        F64Array col, row;  // alive until the factory returns
        if (!factors.is_none()) {
          auto pair = py::cast<py::tuple>(factors);
          if (pair.size() != 2) throw ValueError("factors must be a pair (col, row)");
          col = F64Array::ensure(pair[0]);
          row = F64Array::ensure(pair[1]);
          if (!col || !row || col.ndim() != 2 || row.ndim() != 2 || col.shape(0) != row.shape(0) ||
              col.shape(1) != r.kh || row.shape(1) != r.kw || col.shape(0) < 1)
            throw ValueError("factors must be arrays of shapes (rank, kh) and (rank, kw)");
          r.factor_col = col.data();
          r.factor_row = row.data();
          r.rank = col.shape(0);
        }
        py::array_t<double, py::array::c_style | py::array::forcecast> ki;
        if (!kernel_imag.is_none()) {
          ki = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(kernel_imag);
          if (!ki || ki.ndim() != 2 || ki.shape(0) != r.kh || ki.shape(1) != r.kw)
            throw ValueError("kernel_imag must be a 2-D array of the kernel's shape");
          r.kernel_imag = ki.data();
        }
        r.complex_data = complex_data;
        return make_plan(method, r);
      },
      py::arg("method"), py::arg("kernel"), py::arg("image_rows"), py::arg("image_cols"),
      py::arg("precision"), py::arg("kernel_imag") = py::none(), py::arg("complex_data") = false,
      py::arg("options") = py::none(), py::arg("factors") = py::none());

  // Plans of non-linear filters with their own entry point (tensorconv.filters.bilateral).
  m.def(
      "make_filter_plan",
      [](const std::string& method, const std::string& entry,
         py::array_t<double, py::array::c_style | py::array::forcecast> kernel, std::int64_t ih,
         std::int64_t iw, const std::string& precision, double range_sigma) {
        PlanRequest r = plan_request(kernel, ih, iw, precision);
        r.range_sigma = range_sigma;
        return make_entry_plan(method, entry, r);
      },
      py::arg("method"), py::arg("entry"), py::arg("kernel"), py::arg("image_rows"),
      py::arg("image_cols"), py::arg("precision"), py::arg("range_sigma"));

  // tensorconv.astropy: the finish of NaN interpolation after a method computed the numerator
  // (csrc/cpu/nan_interp.hpp); all arrays are the caller's, on the data's device.
  m.def(
      "nan_interp",
      [](std::uintptr_t p0, std::int64_t p_rows, std::int64_t p_cols, std::int64_t p_stride,
         std::uintptr_t invalid, std::uintptr_t nan_idx, std::int64_t n_nan, std::uintptr_t kernel,
         std::int64_t kh, std::int64_t kw, std::uintptr_t s, std::uintptr_t top,
         std::int64_t out_rows, std::int64_t out_cols, std::int64_t out_stride,
         const std::string& dtype, double ksum, double abs_ksum, double scale, double tau,
         int mode, double wnorm, double floor, double floor_value, bool on_device,
         std::uintptr_t stream, std::uintptr_t n_nan_dev, bool s_f32,
         std::uintptr_t nan_results) {
        entry_kernel(on_device ? "nan_interp_cuda" : "nan_interp_cpu", "astropy.convolve",
                     parse_dtype(dtype));
        if (out_rows < 1 || out_cols < 1 || p_rows != out_rows + kh - 1 ||
            p_cols != out_cols + kw - 1 || p_stride < p_cols || out_stride < out_cols)
          throw ValueError("nan_interp: inconsistent shapes");
        NanInterpArgs a;
        a.p0 = reinterpret_cast<const void*>(p0);
        a.p_rows = p_rows;
        a.p_cols = p_cols;
        a.p_stride = p_stride;
        a.invalid = reinterpret_cast<const std::uint8_t*>(invalid);
        a.nan_idx = reinterpret_cast<const std::int64_t*>(nan_idx);
        a.n_nan = n_nan;
        a.n_nan_dev = reinterpret_cast<const std::int64_t*>(n_nan_dev);
        if (n_nan_dev && !on_device)
          throw ValueError("nan_interp: a device count needs device data");
        a.kernel = reinterpret_cast<const double*>(kernel);
        a.kh = kh;
        a.kw = kw;
        a.s = reinterpret_cast<void*>(s);
        a.s_f32 = s_f32;
        a.nan_results = reinterpret_cast<std::int64_t*>(nan_results);
        if ((s_f32 || nan_results) && !on_device)
          throw ValueError("nan_interp: s_f32 and nan_results are for device data");
        a.top = reinterpret_cast<void*>(top);
        a.out_rows = out_rows;
        a.out_cols = out_cols;
        a.out_stride = out_stride;
        a.dtype = parse_dtype(dtype);
        a.ksum = ksum;
        a.abs_ksum = abs_ksum;
        a.scale = scale;
        a.tau = tau;
        a.mode = mode;
        a.wnorm = wnorm;
        a.floor = floor;
        a.floor_value = floor_value;
        a.on_device = on_device;
        a.stream = stream;
        py::gil_scoped_release release;
        return nan_interp(a);
      });

  // A NumPy result the card writes directly (CUDA plans' host calls, pinned_pool.hpp): a 1-D
  // uint8 array of nbytes whose memory goes back to the pool when the array goes; None where
  // the pool declines (over its cap, no CUDA): the caller then uses np.empty.
  m.def("host_result", [](std::size_t nbytes) -> py::object {
#ifdef TC_WITH_CUDA
    void* p = nullptr;
    {
      py::gil_scoped_release release;
      p = cuda::pinned_take(nbytes, true);
    }
    if (!p) return py::none();
    py::capsule owner(p, [](void* q) { cuda::pinned_give(q); });
    return py::array_t<std::uint8_t>({static_cast<py::ssize_t>(nbytes)}, {py::ssize_t{1}},
                                     static_cast<std::uint8_t*>(p), owner);
#else
    (void)nbytes;
    return py::none();
#endif
  });
  m.def("pinned_held_bytes", []() -> std::size_t {
#ifdef TC_WITH_CUDA
    return cuda::pinned_held_bytes();
#else
    return 0;
#endif
  }, "Pinned host memory held by the pool (staging rings and results, free or in use).");
  m.def("set_pinned_cap", [](std::size_t bytes) {
#ifdef TC_WITH_CUDA
    cuda::pinned_set_cap(bytes);
#else
    (void)bytes;
#endif
  }, "The pinned pool's cap for results (bytes; tensorconv sets it from TENSORCONV_PINNED_MB).");
  // tensorconv.filters.gaussian's one-launch separable filter with scipy.ndimage boundary modes
  // (csrc/cuda/methods/filters/separable_boundary.hpp); device arrays only, launched on `stream`; the
  // weights are a host float64 array the caller keeps alive.
  m.def("separable_boundary_supported", [](std::int64_t rows, std::int64_t cols, int k0, int k1,
                                           const std::string& dtype) {
#ifdef TC_WITH_CUDA
    return separable_boundary_supported(rows, cols, k0, k1, parse_dtype(dtype));
#else
    (void)rows; (void)cols; (void)k0; (void)k1; (void)dtype;
    return false;
#endif
  });
  m.def(
      "separable_boundary",
      [](std::uintptr_t in, std::int64_t rows, std::int64_t cols, std::int64_t in_stride,
         std::uintptr_t out, std::int64_t out_stride, const std::string& dtype,
         std::uintptr_t weights, int k0, int k1, int mode0, int mode1, double cval,
         std::uintptr_t stream) {
#ifdef TC_WITH_CUDA
        entry_kernel("separable_boundary", "filters.gaussian", parse_dtype(dtype));
        const SeparableBoundaryArgs a{reinterpret_cast<const void*>(in), rows, cols, in_stride,
                                      reinterpret_cast<void*>(out), out_stride,
                                      parse_dtype(dtype),
                                      reinterpret_cast<const double*>(weights),  // host, k0 + k1
                                      k0, k1, mode0, mode1, cval, stream};
        separable_boundary(a);  // a launch: the GIL stays held (microseconds)
#else
        (void)in; (void)rows; (void)cols; (void)in_stride; (void)out; (void)out_stride;
        (void)dtype; (void)weights; (void)k0; (void)k1; (void)mode0; (void)mode1; (void)cval;
        (void)stream;
        throw ValueError("separable_boundary: device arrays need a CUDA build of tensorconv");
#endif
      },
      py::arg("in_ptr"), py::arg("rows"), py::arg("cols"), py::arg("in_stride"),
      py::arg("out_ptr"), py::arg("out_stride"), py::arg("dtype"), py::arg("weights_ptr"),
      py::arg("k0"), py::arg("k1"), py::arg("mode0"), py::arg("mode1"), py::arg("cval"),
      py::arg("stream") = 0);

  m.def("nan_mark", [](std::uintptr_t p, std::int64_t rows, std::int64_t cols, std::int64_t stride,
                       const std::string& dtype, std::uintptr_t invalid, std::uintptr_t idx,
                       std::uintptr_t count, bool nonfinite, std::uintptr_t stream) {
#ifdef TC_WITH_CUDA
    DType d = parse_dtype(dtype);
    entry_kernel("nan_interp_cuda", "astropy.convolve", d);
    py::gil_scoped_release release;
    nan_mark_cuda(reinterpret_cast<void*>(p), rows, cols, stride, d,
                  reinterpret_cast<std::uint8_t*>(invalid), reinterpret_cast<std::int64_t*>(idx),
                  reinterpret_cast<std::int64_t*>(count), nonfinite, stream);
#else
    (void)p; (void)rows; (void)cols; (void)stride; (void)dtype; (void)invalid; (void)idx;
    (void)count; (void)nonfinite; (void)stream;
    throw ValueError("nan_mark: device arrays need a CUDA build of tensorconv");
#endif
  });
}
