"""USC-SIPI TIFF -> FITS conversion and loading."""

import os
import tarfile
from pathlib import Path

import numpy as np
import pytest

from tensorconv import datasets


@pytest.fixture(scope="module")
def tiff_dir():
    root = os.environ.get("TENSORCONV_DATA")
    d = Path(root) / "usc-sipi-misc" if root else None
    if d is None or not d.is_dir():
        if os.environ.get("TENSORCONV_REQUIRE_DATA"):
            pytest.fail("TENSORCONV_DATA does not hold usc-sipi-misc/")
        pytest.skip("USC-SIPI TIFFs not found (set TENSORCONV_DATA)")
    return d


def test_convert_folder(tiff_dir, tmp_path):
    import tifffile
    from astropy.io import fits

    out = datasets.convert_usc_sipi(tiff_dir, tmp_path / "fits")
    files = sorted(out.glob("*.fits"))
    assert len(files) == 39
    loaded = dict(datasets.load_usc_sipi(out))
    assert len(loaded) == 39 and list(loaded) == sorted(loaded)
    for name, arr in loaded.items():
        assert arr.dtype == np.float64 and arr.ndim == 2
        assert 0.0 <= arr.min() and arr.max() <= 1.0
    # a colour image becomes BT.601 luma; a gray one is value / 255
    rgb = tifffile.imread(tiff_dir / "4.2.03.tiff").astype(np.float64) / 255
    np.testing.assert_allclose(loaded["4.2.03"], rgb @ np.array([0.299, 0.587, 0.114]),
                               rtol=0, atol=1e-15)
    gray = tifffile.imread(tiff_dir / "5.1.09.tiff")
    np.testing.assert_array_equal(loaded["5.1.09"], gray / 255.0)
    with fits.open(out / "4.2.03.fits") as h:
        assert h[0].header["SRCFILE"] == "4.2.03.tiff"
        assert h[0].header["COLOR"] is True
        assert len(h[0].header["SRCSHA"]) == 64
    # converting again keeps files made from the same bytes
    before = (out / "5.1.09.fits").stat().st_mtime_ns
    datasets.convert_usc_sipi(tiff_dir, out)
    assert (out / "5.1.09.fits").stat().st_mtime_ns == before


def test_convert_tarball_and_cli(tiff_dir, tmp_path, monkeypatch):
    tgz = tmp_path / "misc.tar.gz"
    with tarfile.open(tgz, "w:gz") as tar:
        for n in ("5.1.10.tiff", "4.1.01.tiff"):
            tar.add(tiff_dir / n, arcname=f"misc/{n}")
    monkeypatch.setenv("TENSORCONV_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TENSORCONV_DATA", raising=False)
    names = [n for n, _ in datasets.load_usc_sipi(tgz)]
    assert names == ["4.1.01", "5.1.10"]
    # the cache now holds them, found without any path
    assert [n for n, _ in datasets.load_usc_sipi()] == names
    assert datasets.main(["convert", str(tgz), str(tmp_path / "cli")]) == 0
    assert len(list((tmp_path / "cli").glob("*.fits"))) == 2
    assert datasets.main(["bogus"]) == 2


def test_not_found_says_how_to_get_them(tmp_path, monkeypatch):
    monkeypatch.setenv("TENSORCONV_CACHE", str(tmp_path / "empty"))
    monkeypatch.delenv("TENSORCONV_DATA", raising=False)
    with pytest.raises(FileNotFoundError, match="sipi.usc.edu"):
        list(datasets.load_usc_sipi())
    with pytest.raises(FileNotFoundError, match="misc.tar.gz"):
        list(datasets.load_usc_sipi(tmp_path))


def test_to_unit_gray_rejects_bad_pixels():
    with pytest.raises(ValueError, match="8-bit"):
        datasets.to_unit_gray(np.zeros((2, 2), np.uint16))
    with pytest.raises(ValueError, match="2-D gray or 3-D colour"):
        datasets.to_unit_gray(np.zeros(4, np.uint8))


def test_concurrent_conversion_leaves_whole_files(tiff_dir, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    dest = tmp_path / "shared-cache"
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda _: datasets.convert_usc_sipi(tiff_dir, dest, overwrite=True),
                      range(4)))
    assert not list(dest.glob("*.tmp"))
    loaded = dict(datasets.load_usc_sipi(dest))
    assert len(loaded) == 39
    assert all(a.ndim == 2 and a.size > 0 for a in loaded.values())
