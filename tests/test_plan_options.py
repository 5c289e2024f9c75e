"""Typed plan options (tensorconv.plan(..., options=...)) and the rank factors the separable plan
takes from LAPACK (tensorconv._factors). The options' effects on the GPU kernels are tested with
those methods (test_gpu_core, test_im2tensor, test_fir); here: the table, validation and errors,
which need no GPU (a CUDA method's options are checked before its availability)."""

import numpy as np
import pytest

import tensorconv as tc
from tensorconv._factors import rank_factors


def test_table_rows():
    rows = tc.plan_options()
    names = [o.name for o in rows]
    assert len(names) == len(set(names))
    registry = {m.name for m in tc.methods()}
    expected = {"naive_shmem.coefficients", "naive_shmem.fixed", "separable.fused",
                "separable.tensor_cores", "separable.band_mb", "separable.min_segment_rows", "im2tensor.wc",
                "im2tensor.db", "im2tensor.passes", "im2tensor.wmma", "fir.wc", "fir.db",
                "fir.layout", "fft.layout"}
    assert set(names) == expected
    for o in rows:
        assert o.methods and set(o.methods) <= registry, o
        assert o.values and o.default and o.doc, o


def _plan(method, options, kernel=None):
    k = np.ones((3, 3)) if kernel is None else kernel
    return tc.plan(k, (32, 32), mode="valid", method=method, precision="fp32", options=options)


def test_unknown_option_names_the_valid_ones():
    with pytest.raises(ValueError, match="unknown plan option 'separable.fusd'.*separable.fused"):
        _plan("separable", {"separable.fusd": False})


def test_option_of_another_method():
    with pytest.raises(ValueError, match="'separable.fused' applies to separable, not to 'direct'"):
        _plan("direct", {"separable.fused": False})
    with pytest.raises(ValueError, match="applies to im2tensor_fused, im2tensor_atomic"):
        _plan("im2tensor", {"im2tensor.passes": 2})


@pytest.mark.parametrize("name, value, valid", [
    ("separable.fused", 1, "True, False"),
    ("separable.fused", "no", "True, False"),
    ("separable.band_mb", 0, "1 .. 1048576"),
    ("separable.band_mb", True, "1 .. 1048576"),
    ("separable.min_segment_rows", -1, "0 .. 2"),
    ("naive_shmem.coefficients", "texture", "'shared', 'constant'"),
    ("naive_shmem.fixed", "always", "None, True, False"),
    ("im2tensor.wc", 100, "multiple of the MMA tile width"),
    ("im2tensor.db", 513, "1 .. 512"),
    ("fir.wc", 48, "multiple of 32"),
    ("fir.db", 0, "1 .. 256"),
    ("fir.layout", "64x4x16", "'16x16x16', '32x8x16'"),
    ("fft.layout", "cols", "None, 'rows', '2d'"),
])
def test_bad_values_name_the_valid_ones(name, value, valid):
    method = next(o.methods[0] for o in tc.plan_options() if o.name == name)
    with pytest.raises(ValueError, match=f"plan option '{name}'.*valid values: .*{valid}"):
        _plan(method, {name: value})


def test_value_types():
    with pytest.raises(TypeError, match="options must be a dict"):
        _plan("separable", [("separable.fused", False)])
    with pytest.raises(TypeError, match="must be None, a bool, an int or a str, got float"):
        _plan("separable", {"separable.band_mb": 1.5})
    with pytest.raises(TypeError, match="names are strings"):
        _plan("separable", {1: True})


def test_auto_takes_no_options():
    with pytest.raises(ValueError, match="name the method"):
        tc.plan(np.ones((3, 3)), (32, 32), options={"separable.fused": False})
    tc.plan(np.ones((3, 3)), (32, 32), options={})  # nothing to apply: fine


def test_valid_options_reach_the_method():
    """Valid values (NumPy scalars too; None = the default) pass validation: on a machine without
    a GPU the plan then stops at availability, with the usual message."""
    opts = {"separable.fused": np.bool_(False), "separable.band_mb": np.int64(2),
            "separable.tensor_cores": None, "separable.min_segment_rows": 300}
    if tc.cuda_available():
        p = _plan("separable", opts)
        assert p.options["separable.band_mb"] == 2 and "options=" in repr(p)
        out = p(np.ones((32, 32), np.float32))
        np.testing.assert_allclose(out, 9.0, rtol=1e-6)
    else:
        with pytest.raises(ValueError, match="unavailable"):
            _plan("separable", opts)


def test_correlate2d_options_and_cache_key():
    if not tc.cuda_available():
        with pytest.raises(ValueError, match="applies to separable, not to 'direct'"):
            tc.correlate2d(np.ones((8, 8)), np.ones((3, 3)), method="direct",
                           options={"separable.fused": True})
        return
    a = np.random.default_rng(0).random((40, 50)).astype(np.float32)
    k = np.outer(np.arange(1.0, 6.0), np.arange(1.0, 4.0))
    fused = tc.correlate2d(a, k, method="separable", options={"separable.fused": True})
    two = tc.correlate2d(a, k, method="separable", options={"separable.fused": False})
    np.testing.assert_allclose(fused, two, rtol=1e-5, atol=1e-5)


# ---- rank factors (numpy.linalg.svd) ---------------------------------------------------------

def _sum(col, row):
    return np.einsum("qi,qj->ij", col, row)


@pytest.mark.parametrize("precision", ["fp16", "bf16", "tf32", "fp32", "fp64"])
def test_rank_one_and_two(precision):
    rng = np.random.default_rng(3)
    g = np.exp(-0.5 * ((np.arange(11) - 5) / 2.0) ** 2)
    k1 = np.outer(g, g[:7])
    col, row = rank_factors(k1, precision)
    assert col.shape == (1, 11) and row.shape == (1, 7)
    np.testing.assert_allclose(_sum(col, row), k1, rtol=0, atol=1e-14)
    k2 = k1 + np.outer(rng.random(11), rng.random(7))
    col, row = rank_factors(k2, precision)
    assert col.shape[0] == 2
    np.testing.assert_allclose(_sum(col, row), k2, rtol=0, atol=1e-13)
    assert col.flags.c_contiguous and row.flags.c_contiguous


def test_rank_tolerance_follows_the_precision():
    """A second term of relative size 2^-15 is below bf16's and fp16's operand roundoff (kept
    out), above fp32's (kept)."""
    rng = np.random.default_rng(4)
    u, v = rng.random(9), rng.random(9)
    k = np.outer(u, v) + 2.0**-15 * np.outer(rng.standard_normal(9), rng.standard_normal(9))
    assert rank_factors(k, "bf16")[0].shape[0] == 1
    assert rank_factors(k, "fp16")[0].shape[0] == 1
    assert rank_factors(k, "fp32")[0].shape[0] == 2


def test_float64_outer_products_are_rank_one():
    """Their second singular value is float64 roundoff (about max(kh, kw) * eps), which must not
    make fp64 run a second pass by chance."""
    rng = np.random.default_rng(6)
    for kh, kw in ((40, 17), (33, 47), (23, 31), (64, 64), (2, 60)):
        k = np.outer(rng.standard_normal(kh), rng.standard_normal(kw))
        col, row = rank_factors(k, "fp64")
        assert col.shape[0] == 1, (kh, kw)
        np.testing.assert_allclose(_sum(col, row), k, rtol=0, atol=1e-14 * abs(k).max())


@pytest.mark.parametrize("shape", [(5, 9), (9, 5), (1, 7), (7, 1), (1, 1)])
def test_exact_decomposition(shape):
    """Full rank, a single row or column, or NaN/inf: one term per row (or per column), exact."""
    rng = np.random.default_rng(5)
    k = rng.standard_normal(shape)
    col, row = rank_factors(k, "fp64")
    assert col.shape[0] == min(shape)
    np.testing.assert_array_equal(_sum(col, row), k)
    k[0, 0] = np.nan
    col, row = rank_factors(k, "fp32")
    assert col.shape[0] == min(shape)
    got = _sum(np.nan_to_num(col), np.nan_to_num(row))
    np.testing.assert_array_equal(got[1:, 1:], np.nan_to_num(k)[1:, 1:])


def test_zero_kernel_runs_one_zero_term():
    col, row = rank_factors(np.zeros((4, 6)), "fp32")
    assert col.shape == (1, 4) and row.shape == (1, 6) and not _sum(col, row).any()


def test_core_refuses_a_separable_plan_without_factors():
    from tensorconv import _core
    with pytest.raises(ValueError, match="rank factors|unavailable"):
        _core.make_plan("separable", np.ones((3, 3)), 16, 16, "fp32")


# ---- one place for code paths and for the version ---------------------------------------------

_ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def test_no_environment_variable_chooses_a_plans_code_path():
    """Plans read PlanOptions; the only getenv left are cpu_features.cpp's machine caps
    (TENSORCONV_FORCE_AVX2 / _PORTABLE) and cuda_libs.cpp's library search (CUDA_HOME,
    CUDA_PATH, LD_LIBRARY_PATH: where cuFFT / cuBLAS are, not which code runs)."""
    sources = [p for p in (_ROOT / "csrc").rglob("*")
               if p.suffix in (".cpp", ".cu", ".cuh", ".hpp")]
    assert sources, "the C++ sources are part of the checkout the tests run from"
    readers = sorted(str(p.relative_to(_ROOT)) for p in sources if "getenv(" in p.read_text())
    assert readers == ["csrc/cpu/cpu_features.cpp", "csrc/cuda/runtime/cuda_libs.cpp"], readers


def test_version_is_pyprojects():
    import re

    text = (_ROOT / "pyproject.toml").read_text()
    assert re.search(r'^version = "([^"]+)"', text, re.M).group(1) == tc.__version__


def test_docs_list_every_option(tmp_path, monkeypatch):
    """The plans guide includes the option table that docs/gen_tables.py generates from
    tensorconv.plan_options(): every option, with its methods and default, is in it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_tables", _ROOT / "docs" / "gen_tables.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    monkeypatch.setattr(gen, "OUT", tmp_path)
    gen.plan_options_table()
    table = (tmp_path / "plan_options_table.md").read_text()
    missing = [o.name for o in tc.plan_options() if f"`{o.name}`" not in table]
    assert not missing, missing
    assert "_generated/plan_options_table.md" in (_ROOT / "docs" / "guide" / "plans.md").read_text()
