import numpy as np
import pytest

from tensorconv import metrics


def test_mape_definition():
    ref = np.array([[1.0, 2.0, 0.0], [4.0, -5.0, 10.0]])
    res = ref + np.array([[0.01, 0.0, 3.0], [0.0, 0.05, -1.0]])
    # relative errors: 1%, 0, 0 (r == 0), 0, 1%, 10% -> median of [0,0,0,1,1,10] = 0.5 %
    assert metrics.mape(res, ref) == pytest.approx(0.5)


def test_other_metrics():
    ref = np.array([3.0, 4.0])
    res = np.array([3.0, 4.5])
    assert metrics.relative_l2(res, ref) == pytest.approx(0.5 / 5.0)
    assert metrics.max_abs_error(res, ref) == pytest.approx(0.5)
    assert metrics.max_rel_error(res, ref) == pytest.approx(0.5 / 4.0)
    assert metrics.relative_l2(np.zeros(2), np.zeros(2)) == 0.0


def test_shape_mismatch():
    with pytest.raises(ValueError, match="differs from reference shape"):
        metrics.mape(np.ones(3), np.ones(4))
