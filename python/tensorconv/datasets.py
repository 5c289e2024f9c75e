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
    """The folder for converted FITS files, cached references and cost models.

    ``$TENSORCONV_CACHE``, else ``$XDG_CACHE_HOME/tensorconv``, else ``~/.cache/tensorconv``.
    Not created here.

    Returns
    -------
    pathlib.Path

    Examples
    --------
    >>> from tensorconv.datasets import cache_dir
    >>> cache_dir().name in ("tensorconv",) or "TENSORCONV_CACHE" in __import__("os").environ
    True
    """
    if os.environ.get("TENSORCONV_CACHE"):
        return Path(os.environ["TENSORCONV_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tensorconv"


def to_unit_gray(pixels: np.ndarray) -> np.ndarray:
    """8-bit gray or colour pixels as a float64 gray image in [0, 1].

    Values are divided by 255; colour images become luma Y = 0.299 R + 0.587 G + 0.114 B
    (ITU-R BT.601).

    Parameters
    ----------
    pixels : numpy.ndarray
        uint8, (H, W) gray or (H, W, 3 or 4) colour (a fourth channel is ignored).

    Returns
    -------
    numpy.ndarray
        float64 (H, W) in [0, 1].

    Raises
    ------
    ValueError
        Pixels that are not uint8, or not 2-D / 3-D.

    Examples
    --------
    >>> import numpy as np
    >>> from tensorconv.datasets import to_unit_gray
    >>> to_unit_gray(np.array([[0, 255]], np.uint8))
    array([[0., 1.]])
    >>> float(to_unit_gray(np.array([[[255, 0, 0]]], np.uint8))[0, 0])   # red -> 0.299
    0.299
    """
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
    """Convert USC-SIPI TIFFs into float64 FITS files.

    Each 8-bit TIFF becomes one FITS file of the same name (``.fits``) holding
    `to_unit_gray` of its pixels; the header names the source file (SRCFILE), its SHA-256
    (SRCSHA), whether it was colour (COLOR) and the luma rule (LUMA). Files already converted
    from the same bytes are kept; files are written beside and renamed, so concurrent
    converters and readers only see whole files.

    Parameters
    ----------
    source : path
        A folder of TIFFs, or the official ``misc.tar.gz``.
    dest : path, optional
        Where the FITS files go (default: ``cache_dir() / "usc-sipi-misc"``).
    overwrite : bool, optional
        Convert again even where an up-to-date file exists.

    Returns
    -------
    pathlib.Path
        `dest`.

    Raises
    ------
    FileNotFoundError
        `source` does not exist or holds no TIFF (the message says how to get the images).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import numpy as np
    >>> import tifffile
    >>> from tensorconv import datasets
    >>> src = pathlib.Path(tempfile.mkdtemp())
    >>> tifffile.imwrite(src / "4.1.01.tiff", np.full((4, 6), 255, np.uint8))
    >>> dest = datasets.convert_usc_sipi(src, src / "fits")
    >>> sorted(p.name for p in dest.glob("*.fits"))
    ['4.1.01.fits']
    """
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
    """The folder of converted USC-SIPI FITS files.

    Looks in `path` (a folder of FITS files, of TIFFs, or ``misc.tar.gz``), else
    ``$TENSORCONV_DATA`` (that folder or its ``usc-sipi-misc/`` subfolder), else the cache;
    TIFFs found are converted into the cache first.

    Parameters
    ----------
    path : path, optional
        Where to look first.

    Returns
    -------
    pathlib.Path
        A folder holding ``*.fits``.

    Raises
    ------
    FileNotFoundError
        Nothing found; the message says how to get the images.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import numpy as np
    >>> import tifffile
    >>> from tensorconv import datasets
    >>> src = pathlib.Path(tempfile.mkdtemp())
    >>> tifffile.imwrite(src / "4.1.01.tiff", np.full((4, 6), 255, np.uint8))
    >>> fits = datasets.convert_usc_sipi(src, src / "fits")
    >>> datasets.find_usc_sipi(fits) == fits
    True
    """
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
    """The USC-SIPI images, as (name, float64 array in [0, 1]) pairs sorted by name.

    Parameters
    ----------
    path : path, optional
        Where to look first (see `find_usc_sipi`).

    Yields
    ------
    name : str
        The image's file stem, e.g. ``'4.1.01'``.
    image : numpy.ndarray
        float64 (H, W) in [0, 1].

    Raises
    ------
    FileNotFoundError
        No images found; the message says how to get them.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import numpy as np
    >>> import tifffile
    >>> from tensorconv import datasets
    >>> src = pathlib.Path(tempfile.mkdtemp())
    >>> tifffile.imwrite(src / "4.1.01.tiff", np.full((4, 6), 255, np.uint8))
    >>> fits = datasets.convert_usc_sipi(src, src / "fits")
    >>> [(name, img.shape, float(img.max())) for name, img in datasets.load_usc_sipi(fits)]
    [('4.1.01', (4, 6), 1.0)]
    """
    from astropy.io import fits

    for f in _fits_in(find_usc_sipi(path)):
        with fits.open(f, memmap=False) as hdul:
            yield f.stem, np.ascontiguousarray(hdul[0].data, dtype=np.float64)


def main(argv=None) -> int:
    """The command line: ``python -m tensorconv.datasets convert SOURCE [DEST]``.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status: 0, or 2 (with the usage on stderr) for bad arguments.

    Raises
    ------
    FileNotFoundError
        As `convert_usc_sipi`.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import numpy as np
    >>> import tifffile
    >>> from tensorconv import datasets
    >>> src = pathlib.Path(tempfile.mkdtemp())
    >>> tifffile.imwrite(src / "4.1.01.tiff", np.full((4, 6), 255, np.uint8))
    >>> datasets.main(["convert", str(src), str(src / "fits")])    # doctest: +ELLIPSIS
    converted into ...fits
    0
    >>> datasets.main([])
    2
    """
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) not in (2, 3) or argv[0] != "convert":
        print("usage: python -m tensorconv.datasets convert SOURCE [DEST]", file=sys.stderr)
        return 2
    dest = convert_usc_sipi(argv[1], argv[2] if len(argv) == 3 else None)
    print(f"converted into {dest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
