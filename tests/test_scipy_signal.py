"""scipy's own tests of correlate2d / convolve2d, run unmodified against tensorconv.

The test classes come from the installed scipy (scipy/signal/tests/test_signaltools.py ships in
every wheel); an autouse fixture swaps scipy's functions for tensorconv's, on the default method
and on every method the parameters name (the CPU methods here; GPU methods where a device is).
Only the array-API backend scipy tests with by default (NumPy) runs: tensorconv takes NumPy,
CuPy and PyTorch arrays, not JAX or array-api-strict."""

from __future__ import annotations

import functools
import inspect

import numpy as np
import pytest
import scipy.signal

from conftest import use_cpu_calibration

import tensorconv as tc

sst = pytest.importorskip("scipy.signal.tests.test_signaltools",
                          reason="this scipy ships without its signal tests")
try:
    from scipy.conftest import xp  # noqa: F401  (scipy's fixture; NumPy unless SCIPY_ARRAY_API)
except ImportError:  # pragma: no cover - older scipy: tests take no xp
    pass


fdt = pytest.importorskip("scipy.signal.tests.test_fir_filter_design",
                          reason="this scipy ships without its signal tests")

# 'auto' runs under each of these CPU calibrations (tensorconv.calibrate_cpu()'s file): the
# shipped defaults (no file), and one that makes every transform look nearly free, so that the
# cost model would pick fft_cpu for every problem: scipy's asserts must hold on both (the
# accuracy rule of tensorconv._fft_guard, not the machine's timings, keeps them).
FFT_FAVOURING = {p: {"per_output": 3.3e-10, "per_mac": 1e-8, "fft_fixed": 0.0,
                     "per_unit": [1e-13] * 4} for p in ("fp32", "fp64")}


def _method_params():
    """'auto' (under each calibration), then every available method whose arithmetic is the
    definition's, in fp64: CPU ones always, CUDA ones (gpu-marked) where a device is usable."""
    params = [pytest.param("auto", id="auto"), pytest.param("auto:fft-calibration",
                                                             id="auto-fft-calibration")]
    for m in tc.methods():
        if m.entry != "correlate2d" or "fp64" not in m.precisions:
            continue
        marks = [pytest.mark.gpu] if m.device == "cuda" else []
        if not m.available:
            marks.append(pytest.mark.skip(reason=f"{m.name}: {m.reason}"))
        params.append(pytest.param(m.name, marks=marks, id=m.name))
    return params


# Methods that round differently from the definition by design (spectral products; rank-r
# passes): where one of scipy's exact or tight asserts fails for them, the values must still be
# within 1e-12 of the expected array's largest magnitude (shape and dtype as asserted).
_ROUNDS_DIFFERENTLY = {"fft", "fft_cpu", "separable"}


def _within_1e12(original):
    def check(actual, desired, *args, **kwargs):
        try:
            original(actual, desired, *args, **kwargs)
        except AssertionError:
            a, d = np.asarray(actual), np.asarray(desired)
            assert a.shape == d.shape and a.dtype == d.dtype, (a.shape, a.dtype, d.shape, d.dtype)
            scale = float(np.abs(d).max()) if d.size else 0.0
            assert float(np.abs(a - d).max()) <= 1e-12 * scale, (a, d)
    return check


@pytest.fixture(autouse=True, params=_method_params())
def _tensorconv_functions(request, monkeypatch):
    """scipy's names, module-level and as signal.<name>, point at tensorconv's functions."""
    method = request.param
    if method.startswith("auto"):
        _calibration(monkeypatch, request.getfixturevalue("tmp_path"),
                     FFT_FAVOURING if method.endswith("fft-calibration") else None)
        method = "auto"
    for name, ours in (("convolve2d", tc.convolve2d), ("correlate2d", tc.correlate2d)):
        f = functools.partial(ours, method=method) if method != "auto" else ours
        for module in (sst, fdt, scipy.signal):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, f)
    if method in _ROUNDS_DIFFERENTLY:
        for module in (sst, fdt):
            for name in ("xp_assert_equal", "xp_assert_close", "assert_almost_equal"):
                if hasattr(module, name):
                    monkeypatch.setattr(module, name, _within_1e12(getattr(module, name)))
    yield method
    if request.param.startswith("auto"):
        tc.clear_plan_cache()  # its plans were chosen under this test's calibration


def _calibration(monkeypatch, tmp_path, constants):
    """The CPU cost model reads `constants` (None: no calibration file, the shipped defaults)
    from a fresh cache directory; cached 'auto' plans are dropped before and after."""
    from tensorconv import _cpu_constants

    use_cpu_calibration(monkeypatch, tmp_path, constants)
    if constants is not None:
        assert _cpu_constants.constants()["fp64"]["per_unit"] == constants["fp64"]["per_unit"]
    else:
        assert _cpu_constants.constants() == _cpu_constants.DEFAULTS


def _only_reference_tests(base):
    """`base` with every test hidden that does not call convolve2d (the fftconvolve classes use
    it as their reference in a few tests only; the rest test scipy's FFT code, not ours)."""
    hidden = {name: None for name, f in vars(base).items()
              if name.startswith("test") and callable(f) and "convolve2d(" not in
              inspect.getsource(f)}
    return type(base.__name__, (base,), hidden)


class TestConvolve2d(sst.TestConvolve2d):
    pass


class TestCorrelate2d(sst.TestCorrelate2d):
    pass


TestFFTConvolve = _only_reference_tests(sst.TestFFTConvolve)


class TestFirwin2d(fdt.Testfirwin_2d):
    """scipy's 2-D FIR design tests, whose impulse response goes through convolve2d (a 63^2
    impulse, 31 x 31 taps spanning 1e-36..1, 'same', rtol 1e-5)."""
