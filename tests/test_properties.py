"""Property-based tests (hypothesis): random image and kernel shapes (1 x N, N x 1, kernels
larger than the image, empty, aspect ratios up to 1:300), every dtype (integers, bool,
float16/32/64, complex), memory layouts (C, Fortran, strided, negative strides), modes,
boundaries and fill values, through correlate2d / convolve2d / plans / stacks, against
scipy.signal within the accuracy bounds of tests/bounds.py.

Profiles (TENSORCONV_HYPOTHESIS=<name>, default "ci"):
  ci    fixed seed (derandomized), ~60 examples per CPU test: a few hundred in all, < 60 s on
        a 2-core machine; the GPU tests run 10 examples per method here.
  long  >= 20,000 examples per test, random seeds, no deadline. On a CUDA machine,
        `-m gpu -k test_gpu_family` gives every GPU method family (the registry name's first
        word: naive, fft, im2tensor, fir, ...) 20,000 examples, each on a method of the family
        drawn at random; TENSORCONV_HYPOTHESIS_SHARDS=S splits a family's examples over S
        tests (S pytest-xdist workers, each with its own seed).
TENSORCONV_HYPOTHESIS_EXAMPLES=N sets the long profile's examples per test (per family with
shards: N in all). Examples whose shapes a mode rejects, or that a method's documented limits
refuse, are not counted (hypothesis.assume).

Bounds: an output's error is held to bound(method, precision) * L_i, where L_i = sum |x||k|
over its window (with |fill| in the padding), the scale of a direct sum's rounding; methods
that round through transforms or rank factors are held to bound * max L (their error is
normwise). Integer results are scipy's exactly (its wrapped integer arithmetic)."""

from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.signal as ss

import tensorconv as tc

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, assume, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from bounds import rel_l2_bound  # noqa: E402

PROFILE = os.environ.get("TENSORCONV_HYPOTHESIS", "ci")
if PROFILE not in ("ci", "long"):
    raise ValueError(f"TENSORCONV_HYPOTHESIS must be 'ci' or 'long', got {PROFILE!r}")
_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                      HealthCheck.data_too_large,
                                                      HealthCheck.filter_too_much])
SHARDS = max(1, int(os.environ.get("TENSORCONV_HYPOTHESIS_SHARDS", "1"))) if PROFILE == "long" else 1


def _settings(ci_examples: int, long_examples: int = 20_000, shards: int = 1):
    if PROFILE == "long":
        n = int(os.environ.get("TENSORCONV_HYPOTHESIS_EXAMPLES", long_examples))
        return settings(max_examples=-(-n // shards), **_COMMON)
    return settings(max_examples=ci_examples, derandomize=True, database=None, **_COMMON)


INT_DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
FLOAT_DTYPES = [np.float16, np.float32, np.float64]
COMPLEX_DTYPES = [np.complex64, np.complex128]
ALL_DTYPES = INT_DTYPES + [np.bool_] + FLOAT_DTYPES + COMPLEX_DTYPES
MODES = ("full", "same", "valid")
BOUNDARIES = ("fill", "wrap", "symm")
# round through spectra or rank factors: normwise error
_NORMWISE = {"fft", "fft_cpu", "separable", "convmat", "convmat_rows"}
_SPECTRAL = {"fft", "fft_cpu"}


def _finite(p) -> bool:
    return all(np.isfinite(np.asarray(p[k], dtype=np.complex128)).all() for k in ("in1", "in2"))


@st.composite
def shapes(draw, allow_empty=True):
    kind = draw(st.sampled_from(["small", "small", "small", "row", "col", "wide", "tall",
                                 "empty"] if allow_empty else
                                ["small", "small", "small", "row", "col", "wide", "tall"]))
    if kind == "small":
        return (draw(st.integers(1, 24)), draw(st.integers(1, 24)))
    if kind == "row":
        return (1, draw(st.integers(1, 60)))
    if kind == "col":
        return (draw(st.integers(1, 60)), 1)
    if kind == "wide":
        return (draw(st.integers(1, 3)), draw(st.integers(100, 300)))
    if kind == "tall":
        return (draw(st.integers(100, 300)), draw(st.integers(1, 3)))
    return draw(st.sampled_from([(0, 0), (0, 5), (5, 0), (1, 0), (0, 1)]))


def _values(rng, shape, dtype):
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = (int(info.min), int(info.max)) if dt.itemsize <= 2 else (
            -1000 if dt.kind == "i" else 0, 1000)
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(dt)
    x = rng.uniform(-4, 4, shape)
    if dt.kind == "c":
        x = x + 1j * rng.uniform(-4, 4, shape)
    return x.astype(dt)


def _layout(x, layout: str):
    """The same values in another memory layout."""
    if layout == "C" or x.ndim != 2:
        return np.ascontiguousarray(x)
    if layout == "F":
        return np.asfortranarray(x)
    if layout == "strided":  # every other column of a wider buffer
        buf = np.zeros((x.shape[0], 2 * x.shape[1] + 1), x.dtype)
        buf[:, ::2][:, : x.shape[1]] = x
        return buf[:, ::2][:, : x.shape[1]]
    v = np.ascontiguousarray(x[::-1, ::-1])[::-1, ::-1]  # negative strides
    return v


@st.composite
def problems(draw, dtypes=ALL_DTYPES, allow_empty=True):
    s1 = draw(shapes(allow_empty))
    s2 = draw(st.one_of(shapes(allow_empty), st.tuples(st.integers(1, 7), st.integers(1, 7))))
    d1 = draw(st.sampled_from(dtypes))
    d2 = draw(st.sampled_from([d1] + list(dtypes)))
    mode = draw(st.sampled_from(MODES))
    boundary = draw(st.sampled_from(BOUNDARIES))
    complex_data = np.dtype(d1).kind == "c" or np.dtype(d2).kind == "c"
    fill = draw(st.sampled_from([0, 0, 1, -2.5, 3]) if not complex_data
                else st.sampled_from([0, 1.5, 2 - 1j]))
    seed = draw(st.integers(0, 2**32 - 1))
    l1 = draw(st.sampled_from(["C", "F", "strided", "negative"]))
    l2 = draw(st.sampled_from(["C", "F", "strided", "negative"]))
    nonfinite = draw(st.sampled_from([False] * 7 + [True]))
    rng = np.random.default_rng(seed)
    a, b = _values(rng, s1, d1), _values(rng, s2, d2)
    if nonfinite and a.size and np.dtype(d1).kind in "fc":
        a.flat[rng.integers(a.size)] = rng.choice([np.nan, np.inf, -np.inf])
    return dict(in1=_layout(a, l1), in2=_layout(b, l2), mode=mode, boundary=boundary,
                fillvalue=fill)


def _scipy_crashes(s1, s2, mode, boundary) -> bool:
    """scipy 1.17 dies of SIGFPE on an empty image extended by wrap/symm (tests/test_empty.py)."""
    if boundary == "fill" or mode == "valid" or 0 not in s1 or s2[0] == 0:
        return False
    shape = (s1[0] + s2[0] - 1, s1[1] + s2[1] - 1) if mode == "full" else s1
    return min(shape) > 0


def _valid_shapes_ok(s1, s2) -> bool:
    return all(a >= b for a, b in zip(s1, s2)) or all(a <= b for a, b in zip(s1, s2))


def _wide(x):
    """x as scipy's reference takes it: bool as int64 (scipy refuses bool), float16 as
    float64 (scipy refuses half)."""
    dt = x.dtype
    if dt.kind == "b":
        return x.astype(np.int64)
    if dt == np.float16:
        return x.astype(np.float64)
    return x


def _reference(fn: str, p: dict):
    """scipy's result in its own arithmetic, and L (sum |x||k| per output, |fill| padding)."""
    f = getattr(ss, fn)
    a, b = p["in1"], p["in2"]
    rt = np.result_type(a.dtype, b.dtype)
    if rt.kind in "biu":
        import warnings

        aa, bb = (a.astype(rt), b.astype(rt)) if rt.kind != "b" else (_wide(a), _wide(b))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = f(aa, bb, p["mode"], p["boundary"], p["fillvalue"])
        return (ref != 0 if rt.kind == "b" else ref.astype(rt)), None
    wide = np.complex128 if rt.kind == "c" else np.float64
    if p["boundary"] == "fill":  # scipy's own verdict on the fill value (it raises ValueError)
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f(np.zeros((1, 1), rt if rt != np.float16 else np.float64), np.zeros((1, 1), rt if
              rt != np.float16 else np.float64), "full", "fill", p["fillvalue"])
    aa, bb = a.astype(wide), b.astype(wide)
    with np.errstate(invalid="ignore", over="ignore"):
        ref = f(aa, bb, p["mode"], p["boundary"], p["fillvalue"])
        # the same function: a convolution's windows are not the correlation's (a NaN pixel in
        # one but not the other would make L NaN where the output is finite)
        L = f(np.abs(aa), np.abs(bb), p["mode"], p["boundary"], abs(complex(p["fillvalue"])))
    return ref, L


def _check(out, ref, L, method: str, precision: str):
    out = np.asarray(out)
    assert out.shape == ref.shape, (out.shape, ref.shape)
    if L is None:  # integer / bool results: scipy's exactly
        assert out.dtype == ref.dtype, (out.dtype, ref.dtype)
        np.testing.assert_array_equal(out, ref)
        return
    o = out.astype(np.complex128 if out.dtype.kind == "c" else np.float64)
    if out.dtype.kind in "fc" and out.dtype.itemsize < (16 if out.dtype.kind == "c" else 8):
        # a narrower result stores the exact value rounded: beyond its range, that is +-inf
        with np.errstate(over="ignore", invalid="ignore"):
            rounded = ref.astype(out.dtype).astype(ref.dtype)
        ref = np.where(np.isfinite(ref) & ~np.isfinite(rounded), rounded, ref)
    fin = np.isfinite(ref)
    # non-finite outputs where scipy's are (NaN/inf stay local, as scipy's direct sum). Complex
    # data: where, not which: scipy's complex product makes (inf + 0j) * 2.5 inf + nan j, the
    # real decomposition (a Er, b Er for a real kernel) inf + 0j
    if o.dtype.kind == "c" or ref.dtype.kind == "c":
        np.testing.assert_array_equal(np.isfinite(o), np.isfinite(ref))
    else:
        np.testing.assert_array_equal(np.isnan(o), np.isnan(ref))
        np.testing.assert_array_equal(np.isinf(o), np.isinf(ref))
    if not fin.any():
        return
    tol = rel_l2_bound(method, precision)
    Lf = L[fin & np.isfinite(L)]
    scale = np.where(np.isfinite(L), L, 0)
    if method in _NORMWISE:
        scale = np.full_like(scale, Lf.max() if Lf.size else 0.0)
    with np.errstate(invalid="ignore"):
        err = np.abs(o - ref)[fin]
    # plus the rounding into the result's dtype: one ulp there at the exact value (a float16
    # result below 6.1e-5 is subnormal, its spacing absolute: 6e-8, a relative 1 % at 4e-6)
    real = np.finfo(out.dtype).dtype if out.dtype.kind in "fc" else np.dtype(np.float64)
    with np.errstate(over="ignore"):
        ulp = np.spacing(np.abs(ref[fin]).astype(real)).astype(np.float64)
    limit = tol * scale[fin] + np.where(np.isfinite(ulp), ulp, 0) + np.finfo(np.float64).tiny
    bad = err > limit
    assert not bad.any(), (f"{int(bad.sum())} of {err.size} outputs beyond "
                           f"{tol:g} * L: worst {float((err / limit).max()):.3g} x the bound")


def _precision_of(p) -> str:
    return tc._api.default_precision(str(p["in1"].dtype), str(p["in2"].dtype))


def _run_and_check(fn: str, p: dict, method="auto", precision=None):
    a, b = p["in1"], p["in2"]
    ours = getattr(tc, fn)
    kw = dict(method=method) if method != "auto" else {}
    if precision is not None:
        kw["precision"] = precision
    if _scipy_crashes(a.shape, b.shape, p["mode"], p["boundary"]):
        with pytest.raises(ValueError):
            ours(a, b, p["mode"], p["boundary"], p["fillvalue"], **kw)
        return
    if p["mode"] == "valid" and not _valid_shapes_ok(a.shape, b.shape):
        with pytest.raises(ValueError):
            ours(a, b, p["mode"], p["boundary"], p["fillvalue"], **kw)
        return
    try:
        ref, L = _reference(fn, p)
    except ValueError as e:  # e.g. negative dimensions of empty inputs
        with pytest.raises(ValueError):
            ours(a, b, p["mode"], p["boundary"], p["fillvalue"], **kw)
        return
    out = ours(a, b, p["mode"], p["boundary"], p["fillvalue"], **kw)
    prec = precision or _precision_of(p)
    m = method if method != "auto" else "direct"
    if L is not None and method == "auto" and np.asarray(out).dtype.kind in "fc":
        m = "fft_cpu"  # auto may have taken it (held to its accuracy rule, looser than direct's)
    if L is None and precision is not None:
        L = 0 * ref  # (not reached: a precision keeps float results)
    _check(out, ref, L, m, prec)


# ---- CPU: the drop-in functions, plans, stacks ----------------------------------------------

@_settings(150)
@given(p=problems(), fn=st.sampled_from(["correlate2d", "convolve2d"]))
@example(p=dict(in1=np.zeros((0, 3)), in2=np.ones((2, 2)), mode="full", boundary="fill",
                fillvalue=2.0), fn="correlate2d")
@example(p=dict(in1=np.ones((1, 300)), in2=np.ones((3, 3)), mode="same", boundary="symm",
                fillvalue=0), fn="convolve2d")
# a float16 result whose exact values (65,714.8) are beyond float16's range: +inf, as rounding
# them gives (the long profile's find: the check took the float64 values as the answer)
@example(p=dict(in1=np.array([[1.096]], np.float16), in2=np.full((3, 150), 146, np.uint8),
                mode="full", boundary="wrap", fillvalue=0), fn="correlate2d")
def test_dropin_auto(p, fn):
    _run_and_check(fn, p)


@_settings(100)
@given(p=problems(dtypes=FLOAT_DTYPES + COMPLEX_DTYPES, allow_empty=False),
       fn=st.sampled_from(["correlate2d", "convolve2d"]),
       method=st.sampled_from(["direct", "fft_cpu"]))
def test_cpu_methods(p, fn, method):
    if method in _SPECTRAL and not _finite(p):
        return  # a named transform spreads NaN/inf over its block (documented; auto does not)
    prec = _precision_of(p)
    if prec not in {m.name: m for m in tc.methods()}[method].precisions:
        prec = "fp64"
    _run_and_check(fn, p, method, prec)


@_settings(60)
@given(p=problems(dtypes=FLOAT_DTYPES + COMPLEX_DTYPES, allow_empty=False),
       convolve=st.booleans(), batch=st.integers(1, 3))
def test_plans_and_stacks(p, convolve, batch):
    a, k = p["in1"], p["in2"]
    if p["mode"] == "valid" and not all(x >= y for x, y in zip(a.shape, k.shape)):
        return
    fn = "convolve2d" if convolve else "correlate2d"
    plan = tc.plan(k, a.shape, mode=p["mode"], boundary=p["boundary"],
                   fillvalue=p["fillvalue"], convolve=convolve, precision=_precision_of(p))
    ref, L = _reference(fn, p)
    prec = plan.precision
    m = plan.method
    out = plan(a)
    _check(out, ref, L, m if m != "fft_cpu" else "fft_cpu", prec)
    rng = np.random.default_rng(a.size)
    stack = np.stack([a] + [_values(rng, a.shape, a.dtype) for _ in range(batch - 1)])
    for run in (plan, lambda s: getattr(tc, fn)(s, k, p["mode"], p["boundary"],
                                                p["fillvalue"], batch=True)):
        outs = np.asarray(run(stack))
        assert outs.shape == (batch,) + ref.shape
        for i in range(batch):
            q = dict(p, in1=stack[i])
            r, Li = _reference(fn, q)
            _check(outs[i], r, Li, m, prec)


# ---- GPU: every CUDA method x its precisions, NumPy and device arrays ------------------------

def _gpu_params():
    out = []
    for m in tc.methods():
        if m.device != "cuda" or m.entry != "correlate2d":
            continue
        marks = [pytest.mark.gpu]
        if not m.available:
            marks.append(pytest.mark.skip(reason=f"{m.name}: {m.reason}"))
        out.append(pytest.param(m.name, marks=marks, id=m.name))
    return out


_PREC_DTYPE = {"fp16": np.float16, "fp16fp32": np.float16, "bf16": np.float32,
               "tf32": np.float32, "fp32": np.float32, "fp64": np.float64}


def _device_array(x, kind: str, layout: str):
    if kind == "cupy":
        cp = pytest.importorskip("cupy")
        d = cp.asarray(np.ascontiguousarray(x))
        if layout == "strided":
            buf = cp.zeros((x.shape[0], 2 * x.shape[1]), d.dtype)
            buf[:, ::2] = d
            return buf[:, ::2]
        if layout == "negative":
            return cp.ascontiguousarray(d[::-1, ::-1])[::-1, ::-1]
        if layout == "F":
            return cp.asfortranarray(d)
        return d
    torch = pytest.importorskip("torch")
    d = torch.as_tensor(np.ascontiguousarray(x), device="cuda")
    if layout == "strided":
        buf = torch.zeros((x.shape[0], 2 * x.shape[1]), dtype=d.dtype, device="cuda")
        buf[:, ::2] = d
        return buf[:, ::2]
    if layout == "F":
        return d.t().contiguous().t()
    return d  # torch has no negative strides


def _to_host(x):
    if hasattr(x, "get"):
        return x.get()
    if hasattr(x, "cpu"):
        return x.cpu().numpy()
    return np.asarray(x)


def _gpu_example(method, data):
    """One random problem on one GPU method at a precision it lists, from NumPy, CuPy or torch
    inputs in a random memory layout, against scipy in float64."""
    row = {m.name: m for m in tc.methods()}[method]
    prec = data.draw(st.sampled_from(row.precisions))
    dtypes = [_PREC_DTYPE[prec]]
    if prec in ("fp32", "fp64"):
        dtypes.append(np.complex64 if prec == "fp32" else np.complex128)
    p = data.draw(problems(dtypes=dtypes, allow_empty=False))
    fn = data.draw(st.sampled_from(["correlate2d", "convolve2d"]))
    where = data.draw(st.sampled_from(["numpy", "cupy", "torch"]))
    assume(p["mode"] != "valid" or _valid_shapes_ok(p["in1"].shape, p["in2"].shape))
    if np.dtype(p["in1"].dtype).kind == "c" or np.dtype(p["in2"].dtype).kind == "c":
        if where == "torch":
            where = "cupy"
    # a named transform spreads NaN/inf over its block (documented)
    assume(method not in _SPECTRAL or _finite(p))
    ref, L = _reference(fn, p)
    a, b = p["in1"], p["in2"]
    if where != "numpy":
        layout = data.draw(st.sampled_from(["C", "F", "strided", "negative"]))
        a = _device_array(a, where, layout)
    try:
        out = getattr(tc, fn)(a, b, p["mode"], p["boundary"], p["fillvalue"], method=method,
                              precision=prec)
    except ValueError as e:  # a method's documented limits (shape, kernel size) are not faults
        assert any(w in str(e) for w in ("support", "at most", "kernel", "take", "limit")), e
        assume(False)
    _check(_to_host(out), ref, L, method, prec)


@pytest.mark.parametrize("method", _gpu_params())
@_settings(10)
@given(data=st.data())
def test_gpu_method(method, data):
    _gpu_example(method, data)


def _gpu_family_params():
    families: dict = {}
    for m in tc.methods():
        if m.device == "cuda" and m.entry == "correlate2d":
            families.setdefault(m.name.split("_")[0], []).append(m)
    out = []
    for family, rows in families.items():
        names = tuple(m.name for m in rows if m.available)
        marks = [pytest.mark.gpu]
        if not names:
            marks.append(pytest.mark.skip(reason=f"{family}: {rows[0].reason}"))
        for shard in range(SHARDS):
            out.append(pytest.param(names, marks=marks,
                                    id=family + (f"-{shard}" if SHARDS > 1 else "")))
    return out


@pytest.mark.parametrize("names", _gpu_family_params())
@_settings(10, shards=SHARDS)
@given(data=st.data())
def test_gpu_family(names, data):
    _gpu_example(data.draw(st.sampled_from(names)), data)


# ---- regressions found by the long profile ----------------------------------------------------

_CONVOLVE_WINDOW = dict(in1=np.array([[1.096, np.nan]], np.float16),
                        in2=np.array([[-3.672, -3.867]], np.float16), mode="same",
                        boundary="fill", fillvalue=0)


@pytest.mark.parametrize("method", ["direct"] + _gpu_params())
def test_convolution_held_to_its_own_windows(method):
    """A NaN pixel inside a correlation's window but outside the convolution's: the finite
    output is held to the convolution's L (the long profile's first failure, on every GPU method
    with float16 data: L was the correlation's, NaN there, so any rounding failed)."""
    ref, L = _reference("convolve2d", _CONVOLVE_WINDOW)
    assert np.isfinite(L[0, 0]) and np.isnan(L[0, 1]) and np.isfinite(ref[0, 0])
    row = {m.name: m for m in tc.methods()}[method]
    a, b = _CONVOLVE_WINDOW["in1"], _CONVOLVE_WINDOW["in2"]
    for prec in row.precisions:
        try:
            out = tc.convolve2d(a, b, "same", method=method, precision=prec)
        except ValueError as e:  # a method's documented limits are not faults
            assert any(w in str(e) for w in ("support", "at most", "kernel", "take", "limit")), e
            continue
        _check(_to_host(out), ref, L, method, prec)


# a float16 result below float16's smallest normal (6.1e-5) is subnormal: stored with an absolute
# spacing of 6e-8, 0.7 % of this 4.4e-6 product (the long profile's 'naive' fp16fp32 failure)
_SUBNORMAL = dict(in1=np.array([[1.809e-03, 3.545, -1.706e-02]], np.float16),
                  in2=np.array([[2.562], [-1.793], [-2.459e-03]], np.float16), mode="full",
                  boundary="fill", fillvalue=0)


def test_float16_subnormal_result_held_to_its_rounding():
    ref, L = _reference("correlate2d", _SUBNORMAL)
    stored = ref.astype(np.float16)
    assert np.any((np.abs(stored) > 0) & (np.abs(stored) < np.finfo(np.float16).smallest_normal))
    _check(stored, ref, L, "direct", "fp16fp32")  # the exact value, rounded: within the bound
    with pytest.raises(AssertionError):  # but not one ulp more
        _check(stored + np.spacing(stored) * 4, ref, L, "direct", "fp16fp32")


@pytest.mark.parametrize("method", ["direct"] + _gpu_params())
def test_float16_subnormal_results(method):
    row = {m.name: m for m in tc.methods()}[method]
    ref, L = _reference("correlate2d", _SUBNORMAL)
    for prec in [p for p in row.precisions if p in ("fp16", "fp16fp32")]:
        try:
            out = tc.correlate2d(_SUBNORMAL["in1"], _SUBNORMAL["in2"], "full", method=method,
                                 precision=prec)
        except ValueError as e:  # a method's documented limits are not faults
            assert any(w in str(e) for w in ("support", "at most", "kernel", "take", "limit")), e
            continue
        _check(_to_host(out), ref, L, method, prec)
