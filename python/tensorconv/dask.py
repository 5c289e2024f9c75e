"""tensorconv.dask: correlate2d / convolve2d of images larger than one call (or one device) as
dask arrays, chunk by chunk, with scipy.signal's modes and boundaries.

The whole-array problem is the one a single call solves: pad the image by the mode's widths
with the boundary's rule, then a valid correlation. Here the padding is done on the dask array
(thin strips merged into the edge chunks), and every chunk runs one valid correlation over
itself plus the halo its kernel needs, taken from its neighbours by ``map_overlap``
(asymmetric: ``before + after = k - 1`` per axis). Methods whose registry row says
``translation_invariant`` (direct, naive, naive_shmem: every output the same arithmetic
wherever it sits, or wherever it sits on its translation period: chunk boundaries are moved onto
it) then give the one-call result bit for bit; others (FFTs, tensor-core tiles)
give it within their accuracy bounds. ``method='auto'`` resolves once for the whole image and
keeps to those methods.

2-D arrays of NumPy chunks skip ``map_overlap`` (``halos='gather'``, the default there): each
output chunk's task receives the blocks its padded chunk reads (itself and its neighbours, as
separate arrays, across the image edge for 'wrap'/'symm') and gathers the padded chunk from
them through per-row and per-column (block, local index) maps derived from the one call's
``pad_sources``. Of a block read only in part (a neighbour's halo strip) a task slices that
part, so that a block on another worker sends its strip, not itself. On a CUDA method the C++
staging reads the blocks straight into its pinned buffers (``run_gather_blocks``), so every
pixel is copied once, as one call copies it; on a CPU method NumPy gathers the padded chunk
(one copy). CuPy chunks, stacks and complex data on a GPU keep ``map_overlap``
(``halos='map_overlap'`` asks for it everywhere).

Needs the optional extra: ``pip install "tensorconv[dask]"`` (dask[array], distributed).
"""

from __future__ import annotations

import functools

import numpy as np

try:
    import dask.array as da
except ImportError as e:  # pragma: no cover - the extra is optional
    raise ImportError("tensorconv.dask needs dask: pip install \"tensorconv[dask]\" "
                      "(dask[array] and distributed)") from e

from . import _api, _plan_cache
from ._api import _STORAGE, _COMPLEX_STORAGE, _check_boundary, _check_fillvalue, _check_mode
from ._api import _check_precision, _fill_for, _pads
from ._arrays import boundary_indices, pad_sources
from .methods import _rows as _methods

__all__ = ["clear_plans", "convolve2d", "correlate2d", "exact_methods"]

# per-device fallback of 'auto' when the one-call choice is not translation-invariant
_EXACT_DEFAULT = {"cpu": "direct", "cuda": "naive_shmem"}


def exact_methods() -> list:
    """The methods whose chunked result equals the one-call result bit for bit.

    Their registry rows say ``translation_invariant``: every output is the same arithmetic
    wherever it sits, or wherever it sits on the method's ``translation_period`` (e.g.
    naive_shmem's Winograd row pairs at fp32 9x9 and 15x15), onto which the chunk boundaries
    are then moved.

    Returns
    -------
    list of str
        Method names.

    Examples
    --------
    >>> import tensorconv.dask as tcd
    >>> tcd.exact_methods()
    ['direct', 'naive', 'naive_shmem']
    """
    return [m.name for m in _methods() if m.translation_invariant and m.entry == "correlate2d"]


def _is_cupy(meta) -> bool:
    return type(meta).__module__.split(".")[0] == "cupy"


def _resolve_method(method, precision: str, on_device: bool, kernel64, shape) -> str:
    if not isinstance(method, str):
        raise TypeError(f"method must be a string, got {type(method).__name__}")
    rows = {m.name: m for m in _methods()}
    if method != "auto":
        if method not in rows or rows[method].entry != "correlate2d":
            names = ", ".join(n for n, m in rows.items() if m.entry == "correlate2d")
            raise ValueError(f"unknown method {method!r}; valid methods: auto, {names}")
        # (a precision this client's GPU is too old for may still run on the workers')
        if precision not in rows[method].precisions \
                and precision not in dict(rows[method].precision_min_cc):
            raise ValueError(f"method {method!r} does not support precision {precision!r} "
                             f"(it supports {', '.join(rows[method].precisions)})")
        # availability is the workers' business (the client may have no GPU)
        return method
    macs = float(shape[0]) * shape[1] * kernel64.shape[0] * kernel64.shape[1]
    m = _api.choose_method(precision, on_device, macs, kernel64, tuple(shape))
    if rows[m].translation_invariant:
        return m
    fallback = _EXACT_DEFAULT[rows[m].device]
    if rows[fallback].available and precision in rows[fallback].precisions:
        return fallback
    return m


def _aligned(chunks, period: int, offset: int = 0) -> tuple:
    """Chunks along one axis whose boundaries b are moved down to the nearest b with
    (b + offset) % period == 0 (chunks left empty vanish): a method whose bits hold only under
    translations by multiples of `period` (its registry translation_period) then computes every
    output chunk as the one call does."""
    if period <= 1 or len(chunks) == 1:
        return tuple(chunks)
    ends = np.cumsum(chunks)
    cuts = [int(b - (b + offset) % period) for b in ends[:-1]]
    out, start = [], 0
    for b in cuts + [int(ends[-1])]:
        if b > start:
            out.append(b - start)
            start = b
    return tuple(out)


def _period(method: str, precision: str, kernel) -> tuple:
    """The (rows, columns) translation period of a tile-exact method for this kernel."""
    row = {m.name: m for m in _methods()}.get(method)
    if row is None or not row.translation_invariant:
        return (1, 1)
    return row.translation_period(precision, int(kernel.shape[0]), int(kernel.shape[1]))


def _safe_chunks(chunks, need: int) -> tuple:
    """Chunks along one axis merged until each holds at least `need` elements (the halo a
    neighbour takes from it, and at least one output); unchanged when they already do."""
    need = max(int(need), 1)
    if min(chunks) >= need:
        return tuple(chunks)
    out, acc = [], 0
    for c in chunks:
        acc += c
        if acc >= need:
            out.append(acc)
            acc = 0
    if acc:
        if out:
            out[-1] += acc
        else:
            out.append(acc)
    return tuple(out)


def _fill_block(b, fill):
    xp = np if not _is_cupy(b) else __import__("cupy")
    return xp.full_like(b, fill)


def _pad_axis(a, axis: int, before: int, after: int, boundary: str, fill):
    """The dask array padded along `axis` by scipy's rule (np.pad's index gather, as the one-call
    backends pad), the strips merged into the edge chunks."""
    if before == 0 and after == 0:
        return a
    n = a.shape[axis]
    idx = boundary_indices(n, before, after, "wrap" if boundary == "fill" else boundary)
    parts = []
    if before:
        top = da.take(a, idx[:before], axis=axis)
        parts.append(top.map_blocks(_fill_block, fill, dtype=a.dtype)
                     if boundary == "fill" else top)
    parts.append(a)
    if after:
        bot = da.take(a, idx[before + n:], axis=axis)
        parts.append(bot.map_blocks(_fill_block, fill, dtype=a.dtype)
                     if boundary == "fill" else bot)
    out = da.concatenate(parts, axis=axis)
    c = list(a.chunks[axis])
    c[0] += before
    c[-1] += after
    chunks = list(out.chunks)
    chunks[axis] = tuple(c)
    return out.rechunk(tuple(chunks))


# GPU plans of this process (a Dask worker) live in the one plan cache (tensorconv._plan_cache:
# per device, bounded by its byte budget), by kernel content, chunk shape, method, precision,
# device and stream: correlate2d would otherwise make a GPU plan per chunk, and freeing its
# device buffers (cudaFree) waits for the whole device, stalling the chunks other threads have in
# flight. A chunk checks a plan out (one thread per plan: its staging is not shared) and back in;
# a plan whose call raised is dropped.


def clear_plans() -> None:
    """Forget the plans this process keeps for its next chunks (their device memory).

    These are the plan cache's GPU pools; `tensorconv.clear_plan_cache` clears every pool.

    Returns
    -------
    None

    Examples
    --------
    >>> import tensorconv.dask as tcd
    >>> tcd.clear_plans()
    """
    for name in list(_plan_cache.info()["devices"]):
        if name != "cpu":
            _plan_cache.clear(name)


def _chunk_key(k, shape, method, precision, convolve, dev, stream):
    c = _plan_cache.content(k)
    if c is None:
        return None
    return (dev, stream, "dask", c, k.dtype.str, k.shape, tuple(shape), method, precision,
            bool(convolve))


def _gpu_valid(block, kernel, method, precision, convolve):
    k = kernel.get() if _is_cupy(kernel) else np.asarray(kernel)
    dev = stream = None
    if _is_cupy(block):
        import cupy

        dev, stream = block.device.id, int(cupy.cuda.get_current_stream().ptr)
    key = _chunk_key(k, block.shape[-2:], method, precision, convolve, dev, stream)
    return _plan_cache.run(
        key, lambda: _api.Plan(k, block.shape[-2:], mode="valid", method=method,
                               precision=precision, convolve=convolve, device="cuda"),
        lambda p: p(block),  # a (B, H, W) chunk is one batched call
        host_data=dev is None)


def _valid_block(block, *, kernel, method, precision, convolve, out_dtype, cast):
    """One chunk (with its halo): its valid correlation; 2-D or a (B, H, W) stack."""
    if _method_device(method) == "cuda":
        out = _gpu_valid(block, kernel, method, precision, convolve)
    else:
        f = _api.convolve2d if convolve else _api.correlate2d
        # a stack's chunk is one batched call (the kernel state prepared once for its images)
        out = f(block, kernel, "valid", method=method, precision=precision,
                batch=block.ndim == 3)
    return cast(out, out_dtype)


@functools.lru_cache(maxsize=None)
def _method_device(method: str):
    row = {m.name: m for m in _methods()}.get(method)
    return row.device if row else None


def _cast(x, dtype):
    """The backend's cast of a float result to scipy's integer/bool dtype (as one call does)."""
    from ._arrays import backend_of

    return backend_of(x).cast(x, np.dtype(dtype)) if dtype is not None else x


# ---- halos gathered from the neighbouring blocks (no map_overlap copies) ----

_HALOS = ("auto", "gather", "map_overlap")


@functools.lru_cache(maxsize=64)
def _axis_sources(n: int, before: int, after: int, boundary: str, chunks: tuple):
    """The one call's padded-position -> source-index map of one axis (pad_sources) and the
    first index of each input block along it."""
    src = pad_sources(n, before, after, boundary)
    src.setflags(write=False)
    return src, np.cumsum((0,) + tuple(chunks))


def _axis_maps(n, before, after, boundary, chunks, o0, length):
    """Padded positions o0 .. o0 + length of one axis as (global block, local index) pairs;
    -1, -1 where 'fill' puts the fill value."""
    src, starts = _axis_sources(n, before, after, boundary, chunks)
    s = src[o0:o0 + length]
    blk = np.searchsorted(starts, s, side="right") - 1
    local = np.where(s >= 0, s - starts[np.maximum(blk, 0)], -1)
    return np.where(s >= 0, blk, -1), local


class _Axis:
    """What one output chunk reads along one axis: padded positions o0 .. o0 + length of an
    axis of n source positions chunked as `chunks`, the blocks `used` they come from, and the
    range [lo, hi) read of each (a halo's few rows of a neighbour: only that slice of it is
    moved when it lives on another worker)."""

    __slots__ = ("n", "before", "after", "boundary", "chunks", "o0", "length", "used", "lo", "hi")

    def __init__(self, n, before, after, boundary, chunks, o0, length):
        self.n, self.before, self.after, self.boundary = n, before, after, boundary
        self.chunks, self.o0, self.length = tuple(chunks), o0, length
        self.lo = self.hi = ()
        blk, local = self.maps(global_blocks=True)
        self.used = tuple(int(b) for b in np.unique(blk[blk >= 0]))
        self.lo = tuple(int(local[blk == b].min()) for b in self.used)
        self.hi = tuple(int(local[blk == b].max()) + 1 for b in self.used)

    def whole(self, i: int) -> bool:
        """Whether the range read of used block i is the whole block."""
        return self.lo[i] == 0 and self.hi[i] == self.chunks[self.used[i]]

    def __getstate__(self):
        return {k: getattr(self, k) for k in self.__slots__}

    def __setstate__(self, d):
        for k, v in d.items():
            setattr(self, k, v)

    def maps(self, global_blocks=False):
        """(block, local index) per padded position; else the block as an index into `used`
        and the index local to its range [lo, hi)."""
        blk, local = _axis_maps(self.n, self.before, self.after, self.boundary, self.chunks,
                                self.o0, self.length)
        if not global_blocks:
            blk = np.where(blk >= 0, np.searchsorted(np.asarray(self.used), blk), -1)
            if self.lo:
                local = np.where(blk >= 0, local - np.asarray(self.lo)[np.maximum(blk, 0)], -1)
        return np.ascontiguousarray(blk, np.int64), np.ascontiguousarray(local, np.int64)


def _slice_block(b, r0: int, r1: int, c0: int, c1: int):
    """The part of a block an output chunk reads (a view where the block is local; pickled as
    just those pixels where it moves to another worker)."""
    return b[r0:r1, c0:c1]


def _gather_numpy(blocks, rb, rl, cb, cl, fill, storage):
    """The padded chunk on the host (CPU methods): each pixel copied once from its block."""
    out = np.empty((rl.size, cl.size), np.dtype(storage))
    if (rl < 0).any() or (cl < 0).any():
        out[...] = fill
    for i, row in enumerate(blocks):
        ri = np.flatnonzero(rb == i)
        if not ri.size:
            continue
        for j, b in enumerate(row):
            ci = np.flatnonzero(cb == j)
            if ci.size:
                out[np.ix_(ri, ci)] = np.asarray(b)[np.ix_(rl[ri], cl[ci])]
    return out


def _host_block(b, storage):
    """A block the C++ gather can read: the storage dtype, rows of unit-stride elements."""
    b = np.asarray(b)
    es = np.dtype(storage).itemsize
    if (b.dtype != np.dtype(storage) or b.strides[1] != es or b.strides[0] % es
            or b.strides[0] < b.shape[1] * es):
        b = np.ascontiguousarray(b, np.dtype(storage))
    return b


def _gpu_gather_valid(blocks, rb, rl, cb, cl, fill, kernel, method, precision, convolve,
                      storage):
    """The valid correlation of the padded chunk the C++ staging gathers from `blocks` (a grid
    of host arrays) through the row/column maps, into a result from the pinned pool where it
    fits: no padded copy on the host."""
    k = np.asarray(kernel)
    shape = (int(rl.size), int(cl.size))
    key = _chunk_key(k, shape, method, precision, convolve, None, None)
    grid = [[_host_block(b, storage) for b in row] for row in blocks]
    es = np.dtype(storage).itemsize
    flat = [b for row in grid for b in row]
    ptrs = np.array([b.ctypes.data for b in flat], np.int64)
    dims = np.array([(b.shape[0], b.shape[1], b.strides[0] // es) for b in flat],
                    np.int64).ravel()

    def call(p):
        out = _api._host_result(p.out_shape, storage)
        p._plan.run_gather_blocks(ptrs, dims, len(grid), len(grid[0]), rb, rl, cb, cl,
                                  float(fill), out.ctypes.data, out.shape[0], out.shape[1],
                                  out.strides[0] // es, storage, 0)
        return out

    return _plan_cache.run(key, lambda: _api.Plan(k, shape, mode="valid", method=method,
                                                  precision=precision, convolve=convolve,
                                                  device="cuda"), call, host_data=True)


def _gather_chunk(blocks, *, rows, cols, kernel, method, precision, convolve, out_dtype,
                  fill, storage):
    """One output chunk from the blocks its padded chunk reads (rows.used x cols.used)."""
    rb, rl = rows.maps()
    cb, cl = cols.maps()
    if _method_device(method) == "cuda":
        out = _gpu_gather_valid(blocks, rb, rl, cb, cl, fill, kernel, method, precision,
                                convolve, storage)
    else:
        padded = _gather_numpy(blocks, rb, rl, cb, cl, fill, storage)
        f = _api.convolve2d if convolve else _api.correlate2d
        out = f(padded, kernel, "valid", method=method, precision=precision)
    return _cast(out, out_dtype)


def _last_positive(chunks, delta: int) -> tuple:
    """Output chunks along one axis: the input's, the last grown by `delta` (the mode's padding
    minus the kernel's k - 1), chunks merged from the end until the last is positive."""
    c = list(chunks)
    while len(c) > 1 and c[-1] + delta < 1:
        last = c.pop()
        c[-1] += last
    c[-1] += delta
    return tuple(c)


def _gathered(xs, kernel, mode_pads, bnd, fill, method, precision, convolve, out_dtype,
              res_dtype, storage, meta, period=(1, 1)):
    """The dask graph of the gather path: one task per output chunk, its inputs the blocks it
    reads, or where it reads part of a block (a halo), a task slicing that part: a neighbour
    on another worker then sends its halo strip, not its whole block."""
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    kh, kw = int(kernel.shape[0]), int(kernel.shape[1])
    (pt, pb), (pl, pr) = mode_pads
    axes = []
    for n, (before, after), k, chunks, per in (
            (xs.shape[0], (pt, pb), kh, xs.chunks[0], period[0]),
            (xs.shape[1], (pl, pr), kw, xs.chunks[1], period[1])):
        oc = _aligned(_last_positive(chunks, before + after - (k - 1)), per)
        starts = np.cumsum((0,) + oc)
        axes.append((oc, [_Axis(n, before, after, bnd, chunks, int(starts[i]), c + k - 1)
                          for i, c in enumerate(oc)]))
    (orow, rows), (ocol, cols) = axes
    kk = np.asarray(kernel)
    name = "tc-gather-" + tokenize(xs.name, kk.tobytes(), kk.dtype.str, kk.shape, mode_pads,
                                   bnd, fill, method, precision, convolve, str(out_dtype))
    common = dict(kernel=kernel, method=method, precision=precision, convolve=convolve,
                  out_dtype=out_dtype, fill=fill, storage=storage)
    sname = "tc-halo-" + tokenize(name)
    dsk = {}

    def part(ra, ia, ca, ib):
        """The key of what an output chunk reads of a block: the block, or a slice task."""
        key = (xs.name, ra.used[ia], ca.used[ib])
        if ra.whole(ia) and ca.whole(ib):
            return key
        sl = (ra.lo[ia], ra.hi[ia], ca.lo[ib], ca.hi[ib])
        skey = (sname, ra.used[ia], ca.used[ib]) + sl
        dsk[skey] = (_slice_block, key) + sl
        return skey

    for i, ra in enumerate(rows):
        for j, ca in enumerate(cols):
            blocks = [[part(ra, ia, ca, ib) for ib in range(len(ca.used))]
                      for ia in range(len(ra.used))]
            dsk[(name, i, j)] = (functools.partial(_gather_chunk, rows=ra, cols=ca, **common),
                                 blocks)
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[xs])
    return da.Array(graph, name, chunks=(orow, ocol), dtype=res_dtype, meta=meta)


def _run(x, kernel, mode, boundary, fillvalue, method, precision, convolve: bool, dtype,
         halos="auto"):
    if not isinstance(x, da.Array):
        raise TypeError(f"x must be a dask.array.Array, got {type(x).__name__} (use "
                        "tensorconv.correlate2d for NumPy, CuPy or PyTorch arrays)")
    if isinstance(kernel, da.Array):
        raise TypeError("kernel must be a NumPy or CuPy array, not a dask array (it is sent "
                        "whole to every chunk); pass kernel.compute()")
    if x.ndim not in (2, 3):
        raise ValueError(f"x must be a 2-D dask array (H, W) or a 3-D stack (B, H, W), got "
                         f"ndim={x.ndim}")
    if any(s == 0 for s in x.shape):
        what = "stack has B=0 images" if x.ndim == 3 and x.shape[0] == 0 else "x is empty"
        raise ValueError(f"{what} (shape {tuple(x.shape)})")
    if halos not in _HALOS:
        raise ValueError(f"unknown halos {halos!r}; valid: {', '.join(_HALOS)}")
    kb = _api.backend_of(kernel)
    kernel = kb.asarray(kernel)
    _api._check_array(kernel, kb, "kernel")
    _check_mode(mode)
    bnd = _check_boundary(boundary)
    xk = x.dtype.kind
    if xk not in "biufc":
        raise TypeError(f"x has dtype {x.dtype}; expected a numeric array")
    if xk in "iu" and x.dtype.itemsize > 2:
        raise TypeError(f"x has dtype {x.dtype}: tensorconv.dask takes integers of at most 16 "
                        "bits (whose sums fp64 holds exactly); cast it first, e.g. "
                        "x.astype(np.float64)")
    kh, kw = int(kernel.shape[0]), int(kernel.shape[1])
    ih, iw = x.shape[-2:]
    if mode == "valid" and (kh > ih or kw > iw):
        raise ValueError(f"for 'valid' mode the image {(ih, iw)} must be at least as large as "
                         f"the kernel {(kh, kw)} in every dimension (scipy's swap of the two is "
                         "left to tensorconv.correlate2d)")
    kdt = kb.dtype_str(kernel)
    rt = _api.result_dtype(str(x.dtype), kdt)
    out_dtype = np.dtype(dtype) if dtype is not None else (rt if rt.kind in "biu" else None)
    precision = _check_precision(precision if precision is not None
                                 else _api.default_precision(str(x.dtype), kdt))
    complex_data = "c" in (xk, kb.dtype_kind(kernel))
    if complex_data and precision not in _api.COMPLEX_PRECISIONS:
        raise ValueError(f"complex data needs precision fp32 or fp64; {precision!r} is "
                         "unsupported with complex data")
    fill = _fill_for(_check_fillvalue(fillvalue), complex_data)
    if out_dtype is not None and out_dtype.kind in "biu" and not isinstance(fill, complex):
        fill = np.asarray(fill).astype(out_dtype).item()  # scipy casts it to the output type
    storage = (_COMPLEX_STORAGE[precision] if xk == "c" else _STORAGE[precision])
    on_device = _is_cupy(x._meta)
    k64 = kb.to_host_float64(kernel.real if kb.dtype_kind(kernel) == "c" else kernel)
    (pt, pb), (pl, pr) = _pads(mode, kh, kw, convolve)
    method = _resolve_method(method, precision, on_device, k64, (ih + pt + pb, iw + pl + pr))
    period = _period(method, precision, kernel)
    if isinstance(fill, complex) and xk != "c":
        storage = _COMPLEX_STORAGE[precision]  # a real image padded with a complex fill

    # storage first, then padding: the fill lands in storage as one call puts it there
    xs = x.astype(np.dtype(storage))
    ax = x.ndim - 2
    res_dtype = out_dtype if out_dtype is not None else np.dtype(
        _COMPLEX_STORAGE[precision] if complex_data else _STORAGE[precision])
    meta = da.utils.meta_from_array(x._meta, x.ndim, res_dtype)
    # the gather path: 2-D NumPy chunks (on a GPU method real data: the C++ staging's)
    why = ("x is a stack" if x.ndim != 2 else "x has CuPy chunks" if on_device else
           "complex data (image or kernel) on a GPU method is staged by map_overlap"
           if _method_device(method) == "cuda" and complex_data else None)
    if halos == "gather" and why:
        raise ValueError(f"halos='gather' needs a 2-D dask array of NumPy chunks ({why}); use "
                         "halos='auto' or 'map_overlap'")
    if halos != "map_overlap" and why is None:
        if _is_cupy(kernel):
            kernel = kernel.get()
        return _gathered(xs, kernel, ((pt, pb), (pl, pr)), bnd, fill, method, precision,
                         convolve, out_dtype, res_dtype, storage, meta, period)
    # halo split per axis (before + after = k - 1) so 'same' output chunks are the input's
    depth_r = (min(pt, kh - 1), kh - 1 - min(pt, kh - 1))
    depth_c = (min(pl, kw - 1), kw - 1 - min(pl, kw - 1))
    # every chunk must hold its neighbours' halos and leave at least one output row/column; an
    # output chunk after the first starts at its input chunk's start + pt - depth before, which
    # the method's translation period aligns
    chunks = list(xs.chunks)
    chunks[ax] = _safe_chunks(_aligned(chunks[ax], period[0], pt - depth_r[0]),
                              max(kh - 1, depth_r[1] + 1 - pb, 1))
    chunks[ax + 1] = _safe_chunks(_aligned(chunks[ax + 1], period[1], pl - depth_c[0]),
                                  max(kw - 1, depth_c[1] + 1 - pr, 1))
    if tuple(chunks) != xs.chunks:
        xs = xs.rechunk(tuple(chunks))
    xp_ = _pad_axis(xs, ax, pt, pb, bnd, fill)
    xp_ = _pad_axis(xp_, ax + 1, pl, pr, bnd, fill)

    def out_chunks(c, d):
        c = list(c)
        if len(c) == 1:
            return (c[0] - sum(d),)
        return (c[0] - d[0],) + tuple(c[1:-1]) + (c[-1] - d[1],)

    oc = list(xp_.chunks)
    oc[ax] = out_chunks(oc[ax], depth_r)
    oc[ax + 1] = out_chunks(oc[ax + 1], depth_c)
    depth = {ax: depth_r, ax + 1: depth_c}
    if ax:
        depth[0] = (0, 0)
    return da.map_overlap(
        _valid_block, xp_, depth=depth, boundary="none", trim=False, chunks=tuple(oc),
        dtype=res_dtype, meta=meta, kernel=kernel, method=method, precision=precision,
        convolve=convolve, out_dtype=out_dtype, cast=_cast)


def correlate2d(x, kernel, mode="full", boundary="fill", fillvalue=0, *, method="auto",
                precision=None, dtype=None, halos="auto"):
    """``scipy.signal.correlate2d`` of a dask array, chunk by chunk.

    Each output chunk runs one valid correlation over its chunk plus the halo its kernel needs;
    chunks too small for the halo are merged first. With a method of `exact_methods` the result
    equals `tensorconv.correlate2d` on the whole array bit for bit; other methods give it
    within their accuracy bounds.

    Parameters
    ----------
    x : dask.array.Array
        2-D dask array of NumPy or CuPy chunks, or a 3-D (B, H, W) stack (each image processed
        alone; chunked along B and/or within the images).
    kernel : array_like
        2-D NumPy or CuPy kernel.
    mode, boundary, fillvalue
        As in `tensorconv.correlate2d` (scipy's).
    method : str, optional
        'auto' or a registry method. 'auto' keeps to `exact_methods` ('direct' on the CPU,
        'naive_shmem' on a GPU) unless none runs the precision.
    precision : str, optional
        One of `tensorconv.PRECISIONS`; default from the dtypes.
    dtype : dtype, optional
        The output dtype, as in `tensorconv.correlate2d`.
    halos : {'auto', 'gather', 'map_overlap'}, optional
        'auto': gathered from the neighbouring blocks for 2-D NumPy chunks, ``map_overlap``
        otherwise; 'gather': that path or a ValueError; 'map_overlap': pad the array, then
        ``dask.array.map_overlap``.

    Returns
    -------
    dask.array.Array
        Lazy; ``same`` output keeps the input's chunks.

    Raises
    ------
    ValueError
        As `tensorconv.correlate2d`; an unknown `halos`, or 'gather' where it cannot apply.

    Examples
    --------
    >>> import numpy as np
    >>> import dask.array as da
    >>> import tensorconv as tc
    >>> import tensorconv.dask as tcd
    >>> img = np.random.default_rng(0).random((64, 64))
    >>> k = np.ones((5, 5)) / 25
    >>> x = da.from_array(img, chunks=16)
    >>> out = tcd.correlate2d(x, k, "same", "symm", method="direct")
    >>> out.chunks == x.chunks
    True
    >>> got = out.compute(scheduler="synchronous")
    >>> bool((got == tc.correlate2d(img, k, "same", "symm", method="direct")).all())
    True
    """
    return _run(x, kernel, mode, boundary, fillvalue, method, precision, False, dtype, halos)


def convolve2d(x, kernel, mode="full", boundary="fill", fillvalue=0, *, method="auto",
               precision=None, dtype=None, halos="auto"):
    """``scipy.signal.convolve2d`` of a dask array (or a (B, H, W) stack), chunk by chunk.

    See `correlate2d` for how chunks are computed.

    Parameters
    ----------
    x : dask.array.Array
        2-D dask array of NumPy or CuPy chunks, or a 3-D (B, H, W) stack (each image processed
        alone; chunked along B and/or within the images).
    kernel : array_like
        2-D NumPy or CuPy kernel.
    mode, boundary, fillvalue
        As in `tensorconv.correlate2d` (scipy's).
    method : str, optional
        'auto' or a registry method. 'auto' keeps to `exact_methods` ('direct' on the CPU,
        'naive_shmem' on a GPU) unless none runs the precision.
    precision : str, optional
        One of `tensorconv.PRECISIONS`; default from the dtypes.
    dtype : dtype, optional
        The output dtype, as in `tensorconv.correlate2d`.
    halos : {'auto', 'gather', 'map_overlap'}, optional
        'auto': gathered from the neighbouring blocks for 2-D NumPy chunks, ``map_overlap``
        otherwise; 'gather': that path or a ValueError; 'map_overlap': pad the array, then
        ``dask.array.map_overlap``.

    Returns
    -------
    dask.array.Array
        Lazy.

    Raises
    ------
    ValueError
        As `tensorconv.convolve2d`; an unknown `halos`, or 'gather' where it cannot apply.

    Examples
    --------
    >>> import numpy as np
    >>> import dask.array as da
    >>> import scipy.signal
    >>> import tensorconv.dask as tcd
    >>> img = np.arange(100.0).reshape(10, 10)
    >>> k = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> out = tcd.convolve2d(da.from_array(img, chunks=5), k, "full", method="direct")
    >>> np.allclose(out.compute(scheduler="synchronous"), scipy.signal.convolve2d(img, k))
    True
    """
    return _run(x, kernel, mode, boundary, fillvalue, method, precision, True, dtype, halos)
