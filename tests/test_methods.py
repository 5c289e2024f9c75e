"""Every registry method x precision against scipy.signal.correlate2d (float64) on random data:
odd, non-square and degenerate shapes, kernels up to the image size."""

import numpy as np
import pytest
import scipy.signal
from bounds import rel_l2_bound
from conftest import float_method_params

import tensorconv as tc
from tensorconv.metrics import relative_l2

SHAPES = [  # (image, kernel)
    ((67, 93), (3, 3)),
    ((67, 93), (4, 7)),
    ((64, 64), (15, 15)),
    ((131, 77), (25, 2)),
    ((40, 50), (1, 1)),
    ((1, 37), (1, 5)),
    ((37, 1), (6, 1)),
    ((9, 11), (9, 11)),
    ((200, 300), (55, 55)),
]


@pytest.mark.parametrize("method,precision", float_method_params())
def test_random_valid(method, precision):
    rng = np.random.default_rng(7)
    for ishape, kshape in SHAPES:
        image = rng.standard_normal(ishape)
        kernel = rng.standard_normal(kshape)
        ref = scipy.signal.correlate2d(image, kernel, "valid")
        out = tc.correlate2d(image, kernel, "valid", method=method, precision=precision)
        assert out.shape == ref.shape
        err = relative_l2(out, ref)
        assert err <= rel_l2_bound(method, precision), (ishape, kshape, err)


@pytest.mark.parametrize("method,precision", float_method_params())
def test_modes_and_boundaries(method, precision):
    rng = np.random.default_rng(11)
    image = rng.standard_normal((23, 31))
    kernel = rng.standard_normal((5, 4))
    for fn in ("correlate2d", "convolve2d"):
        for mode in ("full", "same", "valid"):
            for boundary in ("fill", "wrap", "symm"):
                ref = getattr(scipy.signal, fn)(image, kernel, mode, boundary, 0.5)
                out = getattr(tc, fn)(image, kernel, mode, boundary, 0.5, method=method,
                                      precision=precision)
                err = relative_l2(out, ref)
                assert err <= rel_l2_bound(method, precision), (fn, mode, boundary, err)


@pytest.mark.parametrize("method,precision", float_method_params())
def test_plan_reused(method, precision):
    rng = np.random.default_rng(3)
    kernel = rng.standard_normal((7, 6))
    p = tc.plan(kernel, (45, 52), mode="same", boundary="symm", method=method,
                precision=precision)
    assert p.method == method and p.precision == precision
    assert p.workspace_bytes >= 0
    for _ in range(3):
        image = rng.standard_normal((45, 52))
        ref = scipy.signal.correlate2d(image, kernel, "same", "symm")
        assert relative_l2(p(image), ref) <= rel_l2_bound(method, precision)


def test_method_rows_by_name():
    # MethodInfo is built from the core's rows by field name: every field is a member there
    from tensorconv import _core

    row = _core.methods()[0]
    for f in tc.MethodInfo._fields:
        assert hasattr(row, f), f
    assert tc.methods()[0] == tc.MethodInfo(**{f: getattr(row, f) for f in tc.MethodInfo._fields})
    assert all(isinstance(m.precisions, tuple) for m in tc.methods())
    opt = _core.plan_options()[0]
    assert [getattr(opt, f) for f in ("name", "values", "default", "doc")] == \
        [getattr(tc.plan_options()[0], f) for f in ("name", "values", "default", "doc")]


def test_precision_tables_follow_the_core():
    # the core names the precisions and devices; tables keyed by them carry every one
    import pathlib
    import re

    from tensorconv import _api, _autotune, _bounds, _core, _factors

    assert tc.PRECISIONS == tuple(p.name for p in _core.precisions())
    assert tc.PRECISIONS == ("fp16", "fp16fp32", "bf16", "tf32", "fp32", "fp64")
    assert _core.DEVICES == ("cpu", "cuda")
    assert _api.COMPLEX_PRECISIONS == ("fp32", "fp64")
    assert _api._STORAGE["bf16"] == "float32" and _api._COMPLEX_STORAGE["fp64"] == "complex128"
    for table in (_bounds.MAPE_PCT, _bounds.REL_L2, _factors._OPERAND_EPS):
        assert set(table) == set(tc.PRECISIONS)
    names = {m.name for m in tc.methods()}
    for method, precision in (*_bounds.MAPE_PCT_METHOD, *_bounds.REL_L2_METHOD):
        assert method in names and precision in tc.PRECISIONS
    assert set(_bounds.NONDETERMINISTIC) <= names and set(_autotune.SPECTRAL) <= names
    stub = (pathlib.Path(tc.__file__).with_name("__init__.pyi")).read_text()
    literal = re.search(r"^Precision = Literal\[(.*)\]$", stub, re.M).group(1)
    assert tuple(s.strip().strip('"') for s in literal.split(",")) == tc.PRECISIONS


def test_entry_kernels_in_the_registry():
    # kernels launched by their own entry point are rows too, with their devices and precisions
    rows = {m.name: m for m in tc.methods()}
    assert rows["separable_boundary"].entry == "filters.gaussian"
    assert rows["separable_boundary"].device == "cuda"
    for name, device in (("nan_interp_cpu", "cpu"), ("nan_interp_cuda", "cuda")):
        assert rows[name].entry == "astropy.convolve" and rows[name].device == device
        assert rows[name].precisions == ("fp32", "fp64")
    assert rows["nan_interp_cpu"].available
    with pytest.raises(ValueError, match="call tensorconv.filters.gaussian instead"):
        tc.correlate2d(np.ones((4, 4)), np.ones((3, 3)), method="separable_boundary")


def test_entry_kernels_go_through_their_registry_rows():
    """The kernels with no Plan (the fused Gaussian, astropy's NaN interpolation) are registry
    rows with their entry points, and their bindings check the row before launching: a precision
    the row does not list, or a row of another entry, is a ValueError naming it."""
    rows = {m.name: m for m in tc.methods()}
    assert rows["separable_boundary"].entry == "filters.gaussian"
    assert rows["nan_interp_cpu"].entry == rows["nan_interp_cuda"].entry == "astropy.convolve"
    assert rows["nan_interp_cpu"].available
    for r in ("separable_boundary", "nan_interp_cpu", "nan_interp_cuda"):
        assert rows[r].precisions == ("fp32", "fp64")
    z = dict(p0=0, p_rows=3, p_cols=3, p_stride=3, invalid=0, nan_idx=0, n_nan=0, kernel=0,
             kh=3, kw=3, s=0, top=0, out_rows=1, out_cols=1, out_stride=1)
    tail = (1.0, 1.0, 1.0, 0.0, 0, 1.0, 0.0, 0.0, False, 0, 0, False, 0)
    with pytest.raises(ValueError, match="nan_interp_cpu' does not support precision 'fp16'"):
        tc._core.nan_interp(*z.values(), "float16", *tail)


def test_per_precision_architectures():
    # toeplitz_tc runs fp16, bf16 and tf32 from sm_80 and fp32 and fp64 (f64 mma m16n8k8) from
    # sm_90: below that the two are left out of its row and refused with the reason
    from tensorconv import _core
    from tensorconv.methods import gpu_archs

    row = {m.name: m for m in tc.methods()}["toeplitz_tc"]
    assert row.min_compute_capability == 80
    assert dict(row.precision_min_cc) == {"fp32": 90, "fp64": 90}
    older = row.available and _core.cuda_code_arch() < 90
    for p in ("fp32", "fp64"):
        why = _core.precision_unavailable_reason("toeplitz_tc", p)
        if older:
            assert p not in row.precisions and why.startswith(f"{p} needs"), why
            with pytest.raises(ValueError, match=f"'toeplitz_tc' cannot run here: {p} needs"):
                tc.plan(np.ones((3, 3)), (32, 32), method="toeplitz_tc", precision=p)
        else:
            assert p in row.precisions and why == ""
    assert _core.precision_unavailable_reason("toeplitz_tc", "fp16") == ""
    if tc.WITH_CUDA:
        assert "(fp32, fp64: " in gpu_archs(row)


def test_boundaries_column():
    # how 'same' / 'full' reach device images: naive_shmem maps the padding itself, the other
    # CUDA methods get a padded copy; CPU methods pad as they stage (no such column)
    rows = {m.name: m for m in tc.methods()}
    assert rows["naive_shmem"].boundaries.startswith("in the method")
    assert rows["fft"].boundaries == "padded copy" and rows["direct"].boundaries == ""
    assert "same/full on device" in tc.methods_table().splitlines()[0]
