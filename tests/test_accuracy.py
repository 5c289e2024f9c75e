"""The accuracy suite: every available method x precision, kernel sizes 3..55, MAPE against
scipy.signal.correlate2d in float64 (valid mode) on all USC-SIPI misc images loaded from FITS.
The computation is tensorconv.accuracy.evaluate (the same as `python -m tensorconv.accuracy`);
the table (JSON + Markdown) is written at the end of the session (see conftest)."""

import pytest
from conftest import float_method_params

from tensorconv.accuracy import evaluate, within_bound

KERNEL_SIZES = (3, 15, 25, 35, 55)


@pytest.mark.slow
@pytest.mark.parametrize("method,precision", float_method_params())
def test_mape_usc_sipi(method, precision, usc_images, accuracy_rows):
    assert len(usc_images) == 39, "the USC-SIPI misc volume has 39 images"
    failures = []
    for k in KERNEL_SIZES:
        row = evaluate(method, precision, k, usc_images)
        assert not row["non_finite"], f"k={k}: non-finite output for {row['non_finite']}"
        accuracy_rows.append(row)
        if not within_bound(row):
            failures.append(row)
    bound = failures and failures[0]["bound"]
    assert not failures, f"MAPE over bound {bound}% (median) / 5x (max): {failures}"
