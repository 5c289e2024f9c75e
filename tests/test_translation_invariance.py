"""Translation invariance: a method whose registry row says translation_invariant computes every
output by the same arithmetic wherever it sits, so the same window at another position (a shifted
image, a tile of it, another width whose column tails fall elsewhere) gives the same bits. This is
what makes tensorconv.dask's chunked result equal to one call (issue #23: direct's AVX2 column
tails used to differ in the last bits). Every flagged registry method x precision; GPU rows are
gpu-marked."""

import numpy as np
import pytest

import tensorconv as tc
from conftest import float_method_params

_DTYPE = {"fp16": np.float16, "fp16fp32": np.float16, "bf16": np.float32, "tf32": np.float32,
          "fp32": np.float32, "fp64": np.float64}
_FLAGGED = {m.name for m in tc.methods() if m.translation_invariant}


def _params():
    return [p for p in float_method_params() if p.values[0] in _FLAGGED]


def _check_shifts(method, precision, kshape, seed=0):
    rng = np.random.default_rng(seed)
    big = rng.standard_normal((320, 540)).astype(_DTYPE[precision])
    k = rng.standard_normal(kshape)
    h, w = 300, 517  # the example: 9x13 kernel, valid mode

    def corr(a):
        return np.asarray(tc.correlate2d(a, k, "valid", method=method, precision=precision))

    ref = corr(big[:h, :w])
    checked = 0
    for s0, s1 in [(1, 1), (3, 5), (2, 7), (5, 0), (0, 3), (4, 11)]:
        # the same windows, shifted: the whole sub-image moved, and a smaller tile of it (its
        # column tails and row groups fall on other outputs)
        for out in (corr(big[s0:s0 + h, s1:s1 + w]), corr(big[s0:h, s1:w])):
            r = ref[s0:, s1:]
            o = out[: r.shape[0], : r.shape[1]]
            diff = int(np.count_nonzero(o != r))
            assert np.array_equal(o, r, equal_nan=True), (
                f"{method} {precision} kernel {kshape} shift {(s0, s1)}: {diff} of {o.size} "
                "outputs differ from the same windows at another position")
            checked += o.size
    assert checked > 6 * 250_000


def test_registry_flags_translation_invariant_methods():
    assert {"direct", "naive", "naive_shmem"} <= _FLAGGED
    # transforms and atomics cannot promise it
    assert not _FLAGGED & {"fft_cpu", "fft", "im2tensor_atomic"}
    assert "tile-exact" in tc.methods_table()


@pytest.mark.parametrize("method,precision", _params())
@pytest.mark.parametrize("kshape", [(9, 13), (4, 6), (1, 17)])
def test_same_window_same_bits(method, precision, kshape):
    _check_shifts(method, precision, kshape)


@pytest.mark.parametrize("path", ["TENSORCONV_FORCE_AVX2", "TENSORCONV_FORCE_PORTABLE"])
@pytest.mark.parametrize("precision", ["fp64", "fp32", "fp16fp32"])
def test_direct_every_cpu_path(monkeypatch, path, precision):
    """direct's other code paths (AVX2 tiles with scalar column tails, the portable loops) keep
    the same arithmetic for every output too."""
    monkeypatch.setenv(path, "1")
    tc.clear_plan_cache()
    note = {m.name: m for m in tc.methods()}["direct"].note
    if path.endswith("AVX2") and "AVX2" not in note:
        pytest.skip(f"this CPU has no AVX2/FMA path: direct runs {note!r}")
    assert ("AVX2" if path.endswith("AVX2") else "portable") in note, note
    try:
        _check_shifts("direct", precision, (9, 13), seed=1)
    finally:
        monkeypatch.delenv(path)
        tc.clear_plan_cache()
