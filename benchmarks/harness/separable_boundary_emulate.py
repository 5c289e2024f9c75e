"""CPU emulation of the index logic of the fixed-tap fused separable kernels
(csrc/cuda/methods/filters/separable_boundary_fixed.cu), for checking them without a GPU.

It replays, per tile and line by line, what the kernel addresses: the staging of stage() in
separable_boundary.cuh (boundary modes as index maps), the axis-0 pass (R0 rows x V0 columns per
task, float4 groups for V0 = 4), the axis-1 pass (R1 outputs per task, float4 reads from the
aligned column for VEC1), the output tile and its write-out, on a float64 "shared memory" array
that starts as NaN (a read of anything not written this tile poisons the result), checking every
address against the block's allocation, the 16-byte alignment of every float4 access, and that
the axis-1 float4 reads are free of bank conflicts. The result is compared with
scipy.ndimage.correlate1d (axis 0, then axis 1; 'constant' re-extends with cval), which is what
the harness's float64 model computes.

    python benchmarks/harness/separable_boundary_emulate.py          # a few hundred cases, ~1 min
"""
import itertools
import sys

import numpy as np
from scipy import ndimage

KTW = 64
MAXT = 512
MODES = ["reflect", "constant", "nearest", "mirror", "wrap"]
# kFixed of separable_boundary_fixed.cu: (R0, V0, R1, VEC1, NSTAGE)
FIXED = {2: (8, 1, 8, False, 2), 3: (8, 1, 8, True, 2), 4: (8, 4, 8, True, 2),
         5: (16, 1, 16, True, 2), 6: (8, 4, 16, True, 2), 7: (8, 1, 8, True, 2),
         8: (8, 1, 8, True, 3), 9: (16, 1, 16, True, 3),
         # one block per tile (the per-tile logic is the same), one staged tile
         10: (8, 1, 8, True, 1), 11: (8, 1, 8, True, 1)}
OPTIN = 227 * 1024
SMEM_PER_SM, RESERVED = 228 * 1024, 1024


def round_up(a, b):
    return (a + b - 1) // b * b


def shift_of(K):
    return (4 - (K // 2) % 4) % 4


def in_pitch_of(K):
    return round_up(shift_of(K) + KTW + K - 1, 4)


def mid_pitch_of(K, vec1):
    ip = in_pitch_of(K)
    return ip + (36 - ip % 32) % 32 if vec1 else (ip | 1)


def out_pitch_of(vec1):
    return KTW + 4 if vec1 else KTW + 1


def in_size_of(K, vec1, th):
    a, b = (th + K - 1) * in_pitch_of(K), th * out_pitch_of(vec1)
    return round_up(max(a, b), 4)


def total_of(K, vec1, th, nstage=2):
    return nstage * in_size_of(K, vec1, th) + th * mid_pitch_of(K, vec1) + 8


def fit_tile_rows(K, vec1, nstage=2):
    for blocks in (4, 2, 1):
        for th in (64, 32, 16):
            if th == 16 and blocks == 4:
                continue
            b = total_of(K, vec1, th, nstage) * 4
            if b <= OPTIN and blocks * (b + RESERVED) <= SMEM_PER_SM:
                return th
    return 0


def pick_threads(v, h, lo=256):
    best, best_util = lo, 0.0
    for nt in range(lo, MAXT + 1, 32):
        util = (v + h) / (nt * ((v + nt - 1) // nt + (h + nt - 1) // nt))
        if util > best_util + 1e-9:
            best_util, best = util, nt
    return best


def map_index(g, n, mode):
    if 0 <= g < n:
        return g
    if mode == 1:
        return -1
    if mode == 2:
        return 0 if g < 0 else n - 1
    if mode == 4:
        return g % n
    if mode == 0:
        p = 2 * n
        m = g % p
        return m if m < n else p - 1 - m
    if n == 1:
        return 0
    p = 2 * n - 2
    m = g % p
    return m if m < n else p - m


class Smem:
    """The block's shared memory: float64 cells, NaN until written, bounds and alignment checked."""

    def __init__(self, total):
        self.a = np.full(total, np.nan)
        self.total = total

    def check(self, idx, width=1):
        idx = np.asarray(idx)
        assert idx.min() >= 0 and idx.max() + width <= self.total, "shared access out of bounds"
        if width == 4:
            assert np.all(idx % 4 == 0), "float4 access not 16-byte aligned"

    def ld(self, idx, width=1):
        self.check(idx, width)
        idx = np.asarray(idx)
        if width == 1:
            return self.a[idx]
        return np.stack([self.a[idx + u] for u in range(4)], axis=-1)

    def st(self, idx, val, width=1):
        self.check(idx, width)
        idx = np.asarray(idx)
        if width == 1:
            self.a[idx] = val
        else:
            for u in range(4):
                self.a[idx + u] = val[..., u]


def bank_conflict_free_f4(addrs):
    """A warp's float4 shared loads run in 4 phases of 8 lanes; conflict-free when each phase's
    8 lanes cover 8 distinct 16-byte bank quads (address / 4 mod 8), or read the same address."""
    for ph in range(0, len(addrs), 8):
        q = addrs[ph:ph + 8]
        quads = {}
        for a in q:
            quads.setdefault((a // 4) % 8, set()).add(a)
        if any(len(s) > 1 for s in quads.values()):
            return False
    return True


def emulate(img, w0, w1, m0, m1, cval, variant, th, vec=True):
    """The fixed kernel's result for img (float64 arithmetic, the kernel's summation order)."""
    R0, V0, R1, vec1, nstage = FIXED[variant]
    K = len(w0)
    assert len(w1) == K
    r, shift, ip = K // 2, shift_of(K), in_pitch_of(K)
    mp, op = mid_pitch_of(K, vec1), out_pitch_of(vec1)
    ncols = KTW + 2 * r
    G0 = ncols if V0 == 1 else ip // 4
    h, w = img.shape
    in_size = in_size_of(K, vec1, th)
    total = total_of(K, vec1, th, nstage)
    mid_off = nstage * in_size
    items0, items1 = (th // R0) * G0, th * (KTW // R1)
    nt = pick_threads(items0, items1)
    tiles_x = -(-w // KTW)
    tiles = tiles_x * -(-h // th)
    out = np.full((h, w), np.nan)
    conflicts = 0
    for k, tile in enumerate(range(tiles)):  # one block, every tile in turn (buffer k % nstage)
        sm = Smem(total)  # NaN: nothing carried between tiles is used
        base = (k % nstage) * in_size
        ty, tx = divmod(tile, tiles_x)
        y0, x0 = ty * th, tx * KTW
        # stage(): rows th + 2r, staged column c = image column x0 - r - shift + c
        gs = x0 - r - shift
        nvec = (shift + KTW + 2 * r + 3) // 4
        for i in range(th + 2 * r):
            srow = base + i * ip
            gi = map_index(y0 - r + i, h, m0)
            if gi < 0:
                sm.st(srow + np.arange(ip), cval)
                continue
            interior = vec and (y0 - r >= 0 and y0 + th + r <= h and gs >= 0 and gs + nvec * 4 <= w)
            if interior:  # 16-byte copies of whole groups (the kernel needs p.vec too)
                cols = np.arange(nvec * 4)
                sm.st(srow + cols, img[gi, gs + cols])
                continue
            for j in range(shift, shift + KTW + 2 * r):
                gj = map_index(gs + j, w, m1)
                sm.st(srow + j, img[gi, gj] if gj >= 0 else cval)
        # axis 0
        it = np.arange(items0)
        rb, g = it // G0, it % G0
        c = shift + g if V0 == 1 else 4 * g
        colbase = base + rb * R0 * ip + c
        acc = np.zeros((items0, R0) + ((4,) if V0 == 4 else ()))
        for e in range(R0 + K - 1):
            x = sm.ld(colbase + e * ip, V0)
            for q in range(R0):
                t = e - q
                if 0 <= t < K:
                    acc[:, q] = x * w0[t] + acc[:, q]
        for q in range(R0):
            dst = mid_off + (rb * R0 + q) * mp + c
            if V0 == 1:
                outside = (m1 == 1) & ((gs + c < 0) | (gs + c >= w))
                sm.st(dst, np.where(outside, cval, acc[:, q]))
            else:
                cols = gs + c[:, None] + np.arange(4)[None, :]
                outside = (m1 == 1) & ((cols < 0) | (cols >= w))
                sm.st(dst, np.where(outside, cval, acc[:, q]), 4)
        # axis 1
        it = np.arange(items1)
        cb, i = it // th, it % th
        acc = np.zeros((items1, R1))
        if vec1:
            rowbase = mid_off + i * mp + cb * R1
            NV = (shift + R1 + K - 1 + 3) // 4
            for v in range(NV):
                a4 = rowbase + 4 * v
                for wp in range(0, items1, 32):  # per warp of consecutive tasks
                    if not bank_conflict_free_f4(list(a4[wp:wp + 32])):
                        conflicts += 1
                x4 = sm.ld(a4, 4)
                for u in range(4):
                    e = 4 * v + u - shift
                    for q in range(R1):
                        t = e - q
                        if 0 <= t < K:
                            acc[:, q] = x4[:, u] * w1[t] + acc[:, q]
        else:
            rowbase = mid_off + i * mp + shift + cb * R1
            for e in range(R1 + K - 1):
                x = sm.ld(rowbase + e)
                for q in range(R1):
                    t = e - q
                    if 0 <= t < K:
                        acc[:, q] = x * w1[t] + acc[:, q]
        # out_s = this tile's input buffer (rows th x out pitch)
        for q in range(R1):
            sm.st(base + i * op + cb * R1 + q, acc[:, q])
        rows, cols = min(th, h - y0), min(KTW, w - x0)
        for ii in range(rows):
            out[y0 + ii, x0:x0 + cols] = sm.ld(base + ii * op + np.arange(cols))
    return out, conflicts, nt


def reference(img, w0, w1, m0, m1, cval):
    a = ndimage.correlate1d(img, w0, axis=0, mode=MODES[m0], cval=cval)
    return ndimage.correlate1d(a, w1, axis=1, mode=MODES[m1], cval=cval)


def main():
    np.seterr(invalid="ignore")
    rng = np.random.default_rng(5)
    print("layout per tap count: K, tile rows (auto) and shared KB per variant")
    for K in range(3, 24, 2):
        row = []
        for v, (R0, V0, R1, vec1, ns) in FIXED.items():
            th = fit_tile_rows(K, vec1, ns)
            row.append(f"v{v} th{th} {total_of(K, vec1, th, ns) * 4 / 1024:.0f}K "
                       f"(64: {total_of(K, vec1, 64, ns) * 4 / 1024:.0f}K)")
        print(f"  K={K:2d}: " + "; ".join(row))
    shapes = [(67, 91), (1, 37), (37, 1), (3, 5), (130, 70), (1, 1), (100, 128), (70, 200)]
    n = bad = 0
    worst = 0.0
    conflicts = 0
    for (h, w), K, v in itertools.product(shapes, (3, 5, 7, 11, 17, 23), sorted(FIXED)):
        n += 1
        m0, m1 = (n % 5, (n // 5) % 5)
        th = (16, 32, 64)[n % 3]
        img = rng.random((h, w))
        if n % 4 == 0:
            img[h // 2, w // 3] = np.inf
        w0, w1 = rng.uniform(-1, 1, K), rng.uniform(-1, 1, K)
        cval = 0.75 if n % 2 else -2.0
        got, c, _ = emulate(img, w0, w1, m0, m1, cval, v, th, vec=n % 7 != 3)
        conflicts += c
        ref = reference(img, w0, w1, m0, m1, cval)
        fin = np.isfinite(ref)
        same_nonfinite = np.array_equal(np.isnan(got[~fin]), np.isnan(ref[~fin])) and np.all(
            (got[~fin] == ref[~fin]) | np.isnan(ref[~fin]))
        scale = max(1.0, abs(cval)) * np.abs(w0).sum() * np.abs(w1).sum()
        err = np.max(np.abs(got[fin] - ref[fin])) / scale if fin.any() else 0.0
        if not np.isfinite(err) or err > 1e-12 or not same_nonfinite:
            bad += 1
            if bad <= 10:
                print(f"FAIL v{v} {h}x{w} K={K} modes {m0},{m1} th {th}: err {err:.3g} "
                      f"nonfinite ok {same_nonfinite}")
        worst = max(worst, err if np.isfinite(err) else 1e300)
    print(f"emulated {n} cases, {bad} failures, worst rel err {worst:.3g}, "
          f"warps with float4 bank conflicts (axis 1): {conflicts}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
