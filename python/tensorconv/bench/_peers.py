"""Other libraries timed in the same run as the registry methods. Each peer makes, for one image
and kernel in one precision, a callable that computes the valid correlation (or, for the filters
that keep the image's size, that plus a crop the MAPE reads) with its inputs already where the
library computes: on the device for the GPU peers (data on the device, as the paper times),
NumPy arrays for the CPU peers. A peer whose library is missing is skipped with one line."""

from __future__ import annotations

import importlib

import numpy as np


class PeerSkip(Exception):
    """This peer cannot run this case (the message says why)."""


def _module(name):
    try:
        return importlib.import_module(name)
    except Exception as e:  # ImportError, or a broken install (missing CUDA libraries...)
        raise PeerSkip(f"{name} is not usable here ({type(e).__name__}: {e})") from None


def _torch_dev():
    torch = _module("torch")
    if not torch.cuda.is_available():
        raise PeerSkip("torch sees no CUDA device")
    return torch


def _crop_same(k: tuple):
    """Slices of an output of the image's size (centred kernel) holding the valid correlation;
    None for even kernel sides (their centre convention differs between libraries)."""
    kh, kw = k
    if kh % 2 == 0 or kw % 2 == 0:
        return None
    return (slice(kh // 2, -(kh // 2) or None), slice(kw // 2, -(kw // 2) or None))


# ---- GPU peers --------------------------------------------------------------------------------
_TORCH_DT = {"fp16": "float16", "bf16": "bfloat16", "tf32": "float32", "fp32": "float32",
             "fp64": "float64"}


def torch_conv2d(image, kernel, precision):
    """torch.nn.functional.conv2d (cuDNN, fastest algorithm per shape); TF32 only in tf32."""
    torch = _torch_dev()
    F = importlib.import_module("torch.nn.functional")
    dt = getattr(torch, _TORCH_DT[precision])
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = False
    x = torch.from_numpy(image).cuda().to(dt)[None, None].contiguous()
    w = torch.from_numpy(kernel).cuda().to(dt)[None, None].contiguous()
    return lambda: F.conv2d(x, w)[0, 0], None


def torch_fft(image, kernel, precision):
    """irfft2(rfft2(x) * conj(K)) of the image's size (no wrap reaches the valid part), the
    kernel spectrum precomputed (as the paper does for cuFFT), cropped as a view."""
    torch = _torch_dev()
    dt = torch.float32 if precision == "fp32" else torch.float64
    h, w = image.shape
    kh, kw = kernel.shape
    x = torch.from_numpy(image).cuda().to(dt).contiguous()
    K = torch.conj(torch.fft.rfft2(torch.from_numpy(kernel).cuda().to(dt), s=(h, w)))
    return lambda: torch.fft.irfft2(torch.fft.rfft2(x) * K, s=(h, w))[:h - kh + 1, :w - kw + 1], None


def cupy_correlate(image, kernel, precision):
    """cupyx.scipy.ndimage.correlate (direct, output of the image's size)."""
    cp = _module("cupy")
    nd = _module("cupyx.scipy.ndimage")
    dt = cp.float32 if precision == "fp32" else cp.float64
    x, k = cp.asarray(image, dtype=dt), cp.asarray(kernel, dtype=dt)
    return lambda: nd.correlate(x, k, mode="constant"), _crop_same(kernel.shape)


def cupy_fftconvolve(image, kernel, precision):
    """cupyx.scipy.signal.fftconvolve(x, flipped kernel, 'valid')."""
    cp = _module("cupy")
    sig = _module("cupyx.scipy.signal")
    dt = cp.float32 if precision == "fp32" else cp.float64
    x = cp.asarray(image, dtype=dt)
    k = cp.ascontiguousarray(cp.asarray(kernel, dtype=dt)[::-1, ::-1])
    return lambda: sig.fftconvolve(x, k, mode="valid"), None


# ---- CPU peers --------------------------------------------------------------------------------
def scipy_signal(image, kernel, precision):
    """scipy.signal.correlate2d (direct, float64)."""
    sig = _module("scipy.signal")
    return lambda: sig.correlate2d(image, kernel, "valid"), None


def scipy_ndimage(image, kernel, precision):
    """scipy.ndimage.correlate (direct, output of the image's size)."""
    nd = _module("scipy.ndimage")
    dt = np.float32 if precision == "fp32" else np.float64
    x, k = image.astype(dt), kernel.astype(dt)
    return lambda: nd.correlate(x, k, mode="constant"), _crop_same(kernel.shape)


def _scipy_fft_peer(fn_name):
    """scipy.signal.<fn_name>(x, flipped kernel, 'valid') in the precision's dtype."""
    def make(image, kernel, precision):
        fn = getattr(_module("scipy.signal"), fn_name)
        dt = np.float32 if precision == "fp32" else np.float64
        x = image.astype(dt)
        k = np.ascontiguousarray(kernel.astype(dt)[::-1, ::-1])
        return lambda: fn(x, k, "valid"), None
    make.__doc__ = f"scipy.signal.{fn_name}(x, flipped kernel, 'valid')."
    return make


scipy_fftconvolve = _scipy_fft_peer("fftconvolve")
scipy_oaconvolve = _scipy_fft_peer("oaconvolve")


def opencv(image, kernel, precision):
    """cv2.filter2D (a correlation; DFT-based from 11x11 on), BORDER_CONSTANT."""
    cv2 = _module("cv2")
    dt = np.float32 if precision == "fp32" else np.float64
    x, k = image.astype(dt), kernel.astype(dt)
    return (lambda: cv2.filter2D(x, -1, k, borderType=cv2.BORDER_CONSTANT),
            _crop_same(kernel.shape))


# name -> (device, precisions, factory, multiply-adds per second below which a case is too slow
# to time: cases estimated over the row's time cap are skipped with a line)
PEERS = {
    "torch_conv2d": ("cuda", ("fp16", "bf16", "tf32", "fp32", "fp64"), torch_conv2d, None),
    "torch_fft": ("cuda", ("fp32", "fp64"), torch_fft, None),
    "cupy_correlate": ("cuda", ("fp32", "fp64"), cupy_correlate, None),
    "cupy_fftconvolve": ("cuda", ("fp32", "fp64"), cupy_fftconvolve, None),
    "scipy_signal": ("cpu", ("fp64",), scipy_signal, 3e8),
    "scipy_ndimage": ("cpu", ("fp32", "fp64"), scipy_ndimage, 5e8),
    "opencv": ("cpu", ("fp32", "fp64"), opencv, None),
    "scipy_fftconvolve": ("cpu", ("fp32", "fp64"), scipy_fftconvolve, None),
    "scipy_oaconvolve": ("cpu", ("fp32", "fp64"), scipy_oaconvolve, None),
}
# Module each peer needs (checked once per run: a missing one is one line, not one per row).
PEER_MODULE = {"torch_conv2d": "torch", "torch_fft": "torch", "cupy_correlate": "cupyx.scipy.ndimage",
               "cupy_fftconvolve": "cupyx.scipy.signal", "scipy_signal": "scipy.signal",
               "scipy_ndimage": "scipy.ndimage", "opencv": "cv2",
               "scipy_fftconvolve": "scipy.signal", "scipy_oaconvolve": "scipy.signal"}


def usable(names, log) -> list:
    """The peers among names whose library imports (and, for GPU peers, sees a device); one
    line per skipped peer."""
    out = []
    for n in names:
        dev = PEERS[n][0]
        try:
            _module(PEER_MODULE[n])
            if dev == "cuda" and PEER_MODULE[n] == "torch":
                _torch_dev()
            if dev == "cuda" and PEER_MODULE[n].startswith("cupy"):
                _module("cupy").cuda.runtime.getDeviceCount()
        except PeerSkip as e:
            log(f"peer {n} skipped: {e}")
            continue
        except Exception as e:
            log(f"peer {n} skipped: no CUDA device for it ({type(e).__name__}: {e})")
            continue
        out.append(n)
    return out
