"""The CPU `fft_cpu` method: the valid correlation as a product of spectra, computed by pocketfft
(BSD-3, the FFT inside NumPy and SciPy) through scipy.fft on all cores.

csrc/cpu/fft_cpu.cpp wraps `FftCpu` as a registry Plan, so validation, `methods()`, the plan cache
and 'auto' treat it as any other method. Correlation is a product with the conjugate spectrum of
the kernel, computed once per plan. A circular transform of size F >= the image rows aliases only
outputs past the valid ones, so the valid block sits at the top left of the inverse transform
(overlap-save). A plan either transforms the whole image once (sizes of small primes, scipy's
next_fast_len) or cuts it into overlapping blocks whose transforms are cheaper in total (big
images, small kernels), whichever the operation-count model below prefers.

NaN and inf: a spectral method spreads a non-finite input over its whole transform block (the
spectrum of one NaN is all NaN), where `direct` keeps it in the outputs whose window holds it.
`method='auto'` therefore checks the image once per call and runs `direct` on non-finite images.
"""

from __future__ import annotations

import math
import os

import numpy as np


class _ScipyFft:
    """scipy.fft, imported at its first use: importing it costs a third of a second, more than
    the rest of `import tensorconv`."""

    def __getattr__(self, name):
        import scipy.fft

        return getattr(scipy.fft, name)


sfft = _ScipyFft()

from . import _cpu_constants

# Per-element work of a transform block beside its butterflies, in butterfly levels (the copy
# into the block, the spectrum product, the copy out). The seconds per operation come from the
# caller (the calibrated constants of _cpu_constants, by transform size: larger transforms leave
# the caches and cost more per operation). Blocks are transformed one block row at a time (a few MB,
# so a batch stays in the caches): on the 2-core Zen 4, shared with other jobs, 512^2 blocks took
# 4096^2 with k = 63 in 152-167 ms against 217-325 ms for the whole transform, while batches
# of 32 MB were slower than either (289 ms). BLOCK_PENALTY leans to the whole transform where
# the two are within 10 %; blocks below 256^2 lost to it everywhere (per-batch costs).
_FIXED = 10.0
BLOCK_PENALTY = 1.1
_MIN_BLOCK = 256
MAX_STRIP_WIDTH = 4096  # the widest measured


def workers(elements: int = 1 << 30) -> int:
    """Threads for one scipy.fft call over `elements` values: one below 2^19 (a 512^2 transform
    took 1.22 ms on one thread, 1.34 ms on two: the hand-off costs more than it saves)."""
    return 1 if elements < (1 << 19) else (os.cpu_count() or 1)


def block_units(bh: int, bw: int) -> float:
    """Operation count of one block: elements x (log2 elements + fixed)."""
    e = bh * bw
    return e * (math.log2(e) + _FIXED)


def _candidates(i: int, k: int, real: bool) -> list:
    full = sfft.next_fast_len(i, real=real)
    c = {full}
    b = _MIN_BLOCK
    while b < full:
        if b >= 2 * k:
            c.add(sfft.next_fast_len(b, real=real))
        b *= 2
    return sorted(c)


def choose_blocks(ih: int, iw: int, kh: int, kw: int, unit_seconds=None) -> tuple:
    """Transform block shape (bh, bw) for a valid correlation of ih x iw with kh x kw, and the
    predicted seconds of its transforms: operations x unit_seconds(block elements) (default
    1e-10 s, a pure operation count)."""
    full = (sfft.next_fast_len(ih, real=False), sfft.next_fast_len(iw, real=True))
    # Rows up to MAX_STRIP_WIDTH wide are cut into strips of whole rows only: contiguous
    # slabs (no strided gather of square blocks, no overlap along the rows), which beat square
    # blocks of the same operation count (fp32, 2-core Zen 4 under load ~4, one run each:
    # 2048^2 k = 55 512x2048 strips 63 ms vs 256^2 blocks 93, cv2.filter2D 88; 4096^2 k = 25
    # 256x4096 216 vs 512^2 319, cv2 229; k = 55 512x4096 230 vs 277, cv2 401).
    widths = [full[1]] if full[1] <= MAX_STRIP_WIDTH else _candidates(iw, kw, True)
    best = None
    for bh in _candidates(ih, kh, False):
        for bw in widths:
            n = math.ceil((ih - kh + 1) / (bh - kh + 1)) * math.ceil((iw - kw + 1) / (bw - kw + 1))
            t = n * block_units(bh, bw) * (unit_seconds(bh * bw) if unit_seconds else 1e-10)
            rank = t * (1.0 if (bh, bw) == full else BLOCK_PENALTY)
            if best is None or rank < best[0]:
                best = (rank, t, bh, bw)
    _, t, bh, bw = best
    return (bh, bw), t


class FftCpu:
    """Prepared kernel spectrum and block geometry for one kernel, image shape and precision."""

    # Block rows transformed together: a batch's spectra within a few MB (the caches), at
    # least one block row (its blocks keep all cores busy).
    _BATCH_BYTES = 4 << 20

    def __init__(self, kernel: np.ndarray, ih: int, iw: int, precision: str, block=None,
                 kernel_imag: np.ndarray | None = None, complex_data: bool = False):
        """block: the transform block shape (bh, bw), else the cost model's choice.
        complex_data: images and outputs are complex (complex64 for fp32, complex128 for fp64),
        the kernel kernel + i kernel_imag (None: real); complex transforms replace the real ones
        (one pair instead of the four real correlations of the parts)."""
        kh, kw = kernel.shape
        self.shape = (ih, iw)
        self.out_shape = (ih - kh + 1, iw - kw + 1)
        self.precision = precision
        # fp16fp32 transforms in fp32; the kernel is rounded to the storage format first, as
        # `direct` rounds it, so both methods correlate with the same numbers.
        if precision == "fp64":
            self.dtype = np.float64
            k = kernel
        else:
            self.dtype = np.float32
            k = kernel.astype(np.float16 if precision == "fp16fp32" else np.float32)
            k = k.astype(np.float64)
        if block is None:
            block = choose_blocks(ih, iw, kh, kw, _cpu_constants.unit_seconds_fn(precision))[0]
        bh, bw = block
        self.block = (bh, bw)
        self.step = (bh - kh + 1, bw - kw + 1)
        oh, ow = self.out_shape
        self.grid = (math.ceil(oh / self.step[0]), math.ceil(ow / self.step[1]))
        # the conjugate spectrum turns the product into a correlation; computed in float64.
        # Complex data: sum_u x[i+u] E[u] is the product with conj(FFT(conj(E))).
        self.complex = bool(complex_data)
        cdtype = np.complex128 if self.dtype == np.float64 else np.complex64
        if self.complex:
            e = k if kernel_imag is None else k - 1j * kernel_imag.astype(self.dtype)
            spec = np.conj(sfft.fft2(e, s=(bh, bw), workers=workers()))
            self.dtype = cdtype
        else:
            spec = np.conj(sfft.rfft2(k, s=(bh, bw), workers=workers()))
        self.spectrum = spec.astype(cdtype)
        self.single = self.grid == (1, 1)
        cbytes = np.dtype(self.spectrum.dtype).itemsize * bh * (bw // 2 + 1)
        self.batch = max(1, min(self.grid[0], self._BATCH_BYTES // max(1, cbytes * self.grid[1])))

    def _fwd(self, x, **kw):
        return (sfft.fft2 if self.complex else sfft.rfft2)(x, **kw)

    def _inv(self, x, **kw):
        return (sfft.ifft2 if self.complex else sfft.irfft2)(x, **kw)

    @property
    def workspace_bytes(self) -> int:
        bh, bw = self.block
        isz = np.dtype(self.dtype).itemsize
        rows = 1 if self.single else self.batch * self.grid[1]
        # the kernel spectrum, a batch of input blocks, their spectra and inverse transforms
        return int(self.spectrum.nbytes + rows * (2 * bh * bw * isz + 2 * self.spectrum.nbytes))

    def run(self, x: np.ndarray, out: np.ndarray) -> None:
        """out[:] = valid correlation of x (host arrays in the storage dtype; views of the
        caller's buffers, row strides allowed)."""
        if x.dtype != self.dtype:
            x = x.astype(self.dtype)  # fp16fp32: half storage, fp32 transforms
        oh, ow = self.out_shape
        bh, bw = self.block
        if self.single:
            w = workers(bh * bw)
            spec = self._fwd(x, s=(bh, bw), workers=w)
            spec *= self.spectrum  # in place: one image-sized temporary fewer
            y = self._inv(spec, s=(bh, bw), workers=w, overwrite_x=True)
            out[...] = y[:oh, :ow]
            return
        sh, sw = self.step
        gr, gc = self.grid
        ih, iw = x.shape
        need_w = (gc - 1) * sw + bw  # >= iw: the last block column may reach past the image
        gcf, rc = divmod(ow, sw)  # whole block columns of the output, and the rest
        for r0 in range(0, gr, self.batch):
            nr = min(gr, r0 + self.batch) - r0
            a = r0 * sh
            rows = (nr - 1) * sh + bh
            if a + rows <= ih and need_w == iw:
                slab = x[a : a + rows]
            else:  # zero-extend this batch's rows only (a few MB, used at once)
                slab = np.zeros((rows, need_w), dtype=self.dtype)
                avail = min(rows, ih - a)
                slab[:avail, :iw] = x[a : a + avail]
            blocks = np.lib.stride_tricks.sliding_window_view(slab, (bh, bw))[::sh, ::sw]
            w = workers(nr * gc * bh * bw)
            spec = self._fwd(blocks, axes=(-2, -1), workers=w)
            spec *= self.spectrum
            y = self._inv(spec, s=(bh, bw), axes=(-2, -1), workers=w, overwrite_x=True)
            y = y[:, :, :sh, :sw]  # (nr, gc, sh, sw): the valid part of each block
            # straight into out: whole block rows, then a partial last one (no reshaped copy)
            nrf, rr = divmod(min(oh - a, nr * sh), sh)
            if nrf:
                o = out[a : a + nrf * sh]
                if gcf:
                    _tiles(o[:, : gcf * sw], sh, sw)[...] = y[:nrf, :gcf].transpose(0, 2, 1, 3)
                if rc:
                    _tiles(o[:, gcf * sw :], sh, rc)[...] = y[:nrf, gcf:, :, :rc].transpose(
                        0, 2, 1, 3)
            if rr:
                o = out[a + nrf * sh : a + nrf * sh + rr]
                if gcf:
                    _tiles(o[:, : gcf * sw], rr, sw)[...] = y[nrf : nrf + 1, :gcf, :rr].transpose(
                        0, 2, 1, 3)
                if rc:
                    o[:, gcf * sw :] = y[nrf, gcf, :rr, :rc]


def _tiles(o: np.ndarray, th: int, tw: int) -> np.ndarray:
    """A 2-D view whose shape is a multiple of (th, tw) as (rows/th, th, cols/tw, tw), writing
    into o (as_strided on o's own strides: never a copy)."""
    (r, c), (s0, s1) = o.shape, o.strides
    return np.lib.stride_tricks.as_strided(o, (r // th, th, c // tw, tw),
                                           (th * s0, s0, tw * s1, s1))
