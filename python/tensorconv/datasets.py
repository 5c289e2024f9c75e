"""USC-SIPI "Miscellaneous" images as float64 FITS in [0, 1].

Conversion: each 8-bit TIFF becomes one FITS file of the same name (".fits"), pixel values
divided by 255; colour images become luma Y = 0.299 R + 0.587 G + 0.114 B (ITU-R BT.601), also
in [0, 1]. The FITS header names the source file (SRCFILE), its SHA-256 (SRCSHA), whether it was
colour (COLOR) and the luma rule (LUMA).

Where images are looked for, in order: the `path` you pass (a folder of FITS files, a folder of
TIFFs, or the official misc.tar.gz); $TENSORCONV_DATA (that folder, or its usc-sipi-misc/
subfolder); the cache ($TENSORCONV_CACHE, else $XDG_CACHE_HOME/tensorconv, else
~/.cache/tensorconv), where converted FITS files are written.

Command line: python -m tensorconv.datasets convert SOURCE [DEST]
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
import tarfile
import tempfile
import warnings
from pathlib import Path
from typing import Iterator

import numpy as np

LUMA = (0.299, 0.587, 0.114)
SUBDIR = "usc-sipi-misc"
_TIFF = (".tiff", ".tif")
HOW_TO_GET = (
    "USC-SIPI 'Miscellaneous' images not found. Download misc.tar.gz from "
    "https://sipi.usc.edu/database/database.php?volume=misc (see its copyright page), then either "
    "set TENSORCONV_DATA to the folder that holds it (or its TIFFs), pass that path to "
    "load_usc_sipi(path), or run: python -m tensorconv.datasets convert misc.tar.gz")


def cache_dir() -> Path:
    """Folder for converted FITS files and cached references."""
    if os.environ.get("TENSORCONV_CACHE"):
        return Path(os.environ["TENSORCONV_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tensorconv"


def to_unit_gray(pixels: np.ndarray) -> np.ndarray:
    """8-bit gray (H, W) or colour (H, W, 3|4) -> float64 (H, W) in [0, 1] (BT.601 luma)."""
    a = np.asarray(pixels)
    if a.dtype != np.uint8:
        raise ValueError(f"expected 8-bit pixels, got {a.dtype}")
    x = a.astype(np.float64) / 255.0
    if x.ndim == 3:
        x = x[..., 0] * LUMA[0] + x[..., 1] * LUMA[1] + x[..., 2] * LUMA[2]
    elif x.ndim != 2:
        raise ValueError(f"expected a 2-D gray or 3-D colour image, got shape {a.shape}")
    return np.clip(x, 0.0, 1.0)


def _sources(source: Path) -> Iterator[tuple[str, bytes]]:
    """(file name, TIFF bytes) from a folder of TIFFs or a .tar/.tar.gz archive."""
    if source.is_dir():
        for f in sorted(source.iterdir()):
            if f.suffix.lower() in _TIFF:
                yield f.name, f.read_bytes()
    elif tarfile.is_tarfile(source):
        with tarfile.open(source) as tar:
            for member in sorted(tar.getmembers(), key=lambda m: m.name):
                if member.isfile() and Path(member.name).suffix.lower() in _TIFF:
                    yield Path(member.name).name, tar.extractfile(member).read()
    else:
        raise ValueError(f"{source} is neither a folder of TIFFs nor a tar archive")


def convert_usc_sipi(source, dest=None, *, overwrite: bool = False) -> Path:
    """Convert USC-SIPI TIFFs (a folder, or misc.tar.gz) into float64 FITS files in `dest`
    (default: the cache). Files already converted from the same bytes are kept. Returns dest."""
    import tifffile
    from astropy.io import fits

    source = Path(source)
    if not source.exists():
        raise FileNotFoundError(f"{source} does not exist. {HOW_TO_GET}")
    dest = Path(dest) if dest is not None else cache_dir() / SUBDIR
    dest.mkdir(parents=True, exist_ok=True)
    count = 0
    for name, blob in _sources(source):
        sha = hashlib.sha256(blob).hexdigest()
        out = dest / (Path(name).stem + ".fits")
        count += 1
        if out.exists() and not overwrite:
            with fits.open(out) as hdul:
                if hdul[0].header.get("SRCSHA") == sha:
                    continue
        with warnings.catch_warnings():
            # tifffile's own deprecation notices about newer NumPy are not the user's concern
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", FutureWarning)
            pixels = tifffile.imread(io.BytesIO(blob))
        hdu = fits.PrimaryHDU(to_unit_gray(pixels))
        h = hdu.header
        h["DATASET"] = ("USC-SIPI misc", "USC-SIPI Image Database, Miscellaneous volume")
        h["SRCFILE"] = (name, "source TIFF")
        h["SRCSHA"] = sha  # SHA-256 of the source TIFF (64 characters leave no room for a comment)
        h["COLOR"] = (pixels.ndim == 3, "colour source, converted to luma")
        h["LUMA"] = ("0.299R+0.587G+0.114B", "ITU-R BT.601 luma for colour sources")
        h["SCALE"] = ("value/255", "8-bit values scaled to [0, 1]")
        h["ORIGIN"] = "tensorconv"
        # Write beside, then rename: concurrent converters (pytest-xdist workers, several
        # notebooks) and readers only ever see whole files.
        fd, tmp = tempfile.mkstemp(suffix=".fits.tmp", dir=dest)
        os.close(fd)
        try:
            hdu.writeto(tmp, overwrite=True)
            os.replace(tmp, out)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    if count == 0:
        raise FileNotFoundError(f"no TIFF images in {source}. {HOW_TO_GET}")
    return dest


def _fits_in(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.fits")) if folder.is_dir() else []


def _has_tiffs(folder: Path) -> bool:
    return folder.is_dir() and any(f.suffix.lower() in _TIFF for f in folder.iterdir())


def find_usc_sipi(path=None) -> Path:
    """The folder of converted FITS files, converting TIFFs into the cache when that is all
    there is. FileNotFoundError, saying how to get the images, when nothing is found."""
    candidates = []
    if path is not None:
        candidates.append(Path(path))
    elif os.environ.get("TENSORCONV_DATA"):
        root = Path(os.environ["TENSORCONV_DATA"])
        candidates += [root, root / SUBDIR]
    for c in candidates:
        if _fits_in(c):
            return c
        if _has_tiffs(c) or (c.is_file() and tarfile.is_tarfile(c)):
            return convert_usc_sipi(c)
        if c.is_dir():
            for tgz in sorted(c.glob("misc.tar*")):
                return convert_usc_sipi(tgz)
    if path is not None:
        raise FileNotFoundError(f"no USC-SIPI FITS, TIFFs or misc.tar.gz at {path}. {HOW_TO_GET}")
    cached = cache_dir() / SUBDIR
    if _fits_in(cached):
        return cached
    raise FileNotFoundError(HOW_TO_GET)


def load_usc_sipi(path=None) -> Iterator[tuple[str, np.ndarray]]:
    """Yield (name, float64 array in [0, 1]) for every USC-SIPI FITS image, sorted by name."""
    from astropy.io import fits

    for f in _fits_in(find_usc_sipi(path)):
        with fits.open(f, memmap=False) as hdul:
            yield f.stem, np.ascontiguousarray(hdul[0].data, dtype=np.float64)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) not in (2, 3) or argv[0] != "convert":
        print("usage: python -m tensorconv.datasets convert SOURCE [DEST]", file=sys.stderr)
        return 2
    dest = convert_usc_sipi(argv[1], argv[2] if len(argv) == 3 else None)
    print(f"converted into {dest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
