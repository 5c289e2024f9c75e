"""The accuracy suite: every available method x precision, kernel sizes 3..55, MAPE against
scipy.signal.correlate2d in float64 (valid mode) on all USC-SIPI misc images loaded from FITS.
Writes the table (JSON + Markdown) at the end of the session (see conftest)."""

import numpy as np
import pytest
from bounds import mape_bound
from conftest import accuracy_kernel, float_method_params, scipy_reference

import tensorconv as tc
from tensorconv.metrics import mape

KERNEL_SIZES = (3, 15, 25, 35, 55)


@pytest.mark.slow
@pytest.mark.parametrize("method,precision", float_method_params())
def test_mape_usc_sipi(method, precision, usc_images, accuracy_rows):
    bound = mape_bound(method, precision)
    assert len(usc_images) == 39, "the USC-SIPI misc volume has 39 images"
    failures = []
    for k in KERNEL_SIZES:
        kernel = accuracy_kernel(k)
        values = []
        for name, image in usc_images:
            out = tc.correlate2d(image, kernel, "valid", method=method, precision=precision)
            ref = scipy_reference(name, image, k)
            assert out.shape == ref.shape
            assert np.isfinite(np.asarray(out, dtype=np.float64)).all(), f"{name}: non-finite output"
            values.append(mape(out, ref))
        v = np.asarray(values)
        row = {"method": method, "precision": precision, "k": k, "images": len(v),
               "mape_median": float(np.median(v)), "mape_p2_5": float(np.percentile(v, 2.5)),
               "mape_p97_5": float(np.percentile(v, 97.5)), "mape_max": float(v.max()),
               "bound": bound}
        accuracy_rows.append(row)
        if row["mape_median"] > bound or row["mape_max"] > 5 * bound:
            failures.append(row)
    assert not failures, f"MAPE over bound {bound}% (median) / {5 * bound}% (max): {failures}"
