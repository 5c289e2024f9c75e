"""PyTorch ops and a module: depthwise 2-D correlation / convolution by tensorconv's methods,
differentiable, traceable by torch.compile(fullgraph=True) and torch.export.

    import tensorconv.torch as tct
    y = tct.correlate2d(x, w, mode="same")          # x (N, C, H, W), w (C, kh, kw) or (C, 1, kh, kw)
    conv = tct.Conv2dDepthwise(64, 64, 31, padding=15, groups=64)   # nn.Conv2d's arguments

Every image of channel c is correlated with kernel c (tensorconv's per-image kernels, one call
for the whole stack on direct / fft). mode, boundary and fillvalue are scipy.signal's; with
mode='same' and fill 0 the result is torch.nn.functional.conv2d(x, w[:, None], padding=k // 2,
groups=C) for odd kernels (conv2d is a correlation).

Ops (torch.library.custom_op): tensorconv::correlate2d and tensorconv::convolve2d, with
register_fake (shape, dtype and argument checks at trace time) and register_autograd. The
backward is written with the same ops, so it is differentiable again (gradgradcheck):

* grad of the padded input xp = the 'full' adjoint of the valid correlation: the convolution of
  grad_out with the kernel ('full', fill 0). With boundary 'fill' this is folded into the op's
  mode directly: the input's gradient is convolve2d(grad_out, w, m') with m' = same for same,
  full for valid, valid for full (correlation and convolution swap for a convolution's
  backward). With 'wrap' or 'symm' the padded input is a gather x[rows][:, cols] of the image
  (np.pad's indices, as tensorconv._arrays.boundary_indices gives them), so its adjoint adds every padded
  row and column of the full-mode gradient back onto the image position it was read from
  (index_add along H, then along W): for 'wrap' that is the wrap correlation with the flipped
  kernel, for 'symm' the mirrored borders are folded onto the image's edge rows.
* grad of the kernel = the valid correlation of the padded input (image n, c) with grad_out
  (n, c) as a per-image kernel, summed over N; flipped for a convolution. Those kernels are as
  large as the image and already on the caller's device, so for CUDA tensors and method='auto'
  it is computed there by torch.fft (cuFFT): the padded input's and grad_out's spectra, their
  products summed over N, one inverse transform per channel, cropped to the kernel (in float64
  for fp64, else float32). Elsewhere (CPU tensors, a named method) by the op itself: direct on
  the CPU, or the named method.

Precisions: precision=None maps the dtype: float64 -> fp64, float32 -> fp32 (never tf32 unless
asked), float16 -> fp16fp32, bfloat16 -> bf16 (on the CPU, where no method has bf16, fp32
arithmetic rounded to bfloat16). The result has the input's dtype. Under torch.autocast the
wrappers cast both tensors to the autocast dtype first (as conv2d is).

Streams: CUDA tensors run on the caller's current stream (tensorconv takes
torch.cuda.current_stream() for every launch). Each call reads the weights to the host to make
its plan (the kernels' spectra are computed from float64 host kernels), which waits for the
stream's pending work on them.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np
import torch
from torch import Tensor, nn

from . import _api

__all__ = ["correlate2d", "convolve2d", "Conv2dDepthwise", "precision_for"]

_PRECISION = {torch.float64: "fp64", torch.float32: "fp32", torch.float16: "fp16fp32",
              torch.bfloat16: "bf16"}
_ADJOINT_MODE = {"same": "same", "valid": "full", "full": "valid"}


def precision_for(dtype: torch.dtype) -> str:
    """tensorconv's precision for a floating dtype (what ``precision=None`` takes).

    Parameters
    ----------
    dtype : torch.dtype
        float16, bfloat16, float32 or float64.

    Returns
    -------
    str
        ``'fp16fp32'``, ``'bf16'``, ``'fp32'`` (never tf32) or ``'fp64'``.

    Examples
    --------
    >>> import torch
    >>> from tensorconv.torch import precision_for
    >>> precision_for(torch.float32), precision_for(torch.float16)
    ('fp32', 'fp16fp32')
    """
    try:
        return _PRECISION[dtype]
    except KeyError:
        raise TypeError(f"tensorconv.torch takes float16, bfloat16, float32 or float64 tensors, "
                        f"got {dtype}") from None


def _check(input: Tensor, weight: Tensor, mode: str, boundary: str, method: str,
           precision: Optional[str]) -> tuple:
    """The ops' argument checks (eager, fake and traced alike); returns the output's (H, W)."""
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError("input and weight must be torch tensors")
    if input.dim() != 4:
        raise ValueError(f"input must be (N, C, H, W), got shape {tuple(input.shape)}")
    if weight.dim() != 3:
        raise ValueError(f"weight must be (C, kh, kw) or (C, 1, kh, kw), got shape "
                         f"{tuple(weight.shape)}")
    if input.dtype != weight.dtype:
        raise TypeError(f"input and weight must have one dtype, got input {input.dtype} and "
                        f"weight {weight.dtype}")
    precision_for(input.dtype)
    if input.device != weight.device:
        raise ValueError(f"input and weight must be on one device, got input on {input.device} "
                         f"and weight on {weight.device}")
    n, c, h, w = input.shape
    if weight.shape[0] != c:
        raise ValueError(f"weight has {weight.shape[0]} kernels and input has {c} channels: "
                         "depthwise correlation takes one kernel per channel")
    if 0 in (n, c, h, w) or 0 in tuple(weight.shape):
        raise ValueError(f"empty input {tuple(input.shape)} or weight {tuple(weight.shape)}")
    _api._check_mode(mode)
    _api._check_boundary(boundary)
    if precision is not None:
        _api._check_precision(precision)
    if not isinstance(method, str):
        raise TypeError(f"method must be a string, got {type(method).__name__}")
    kh, kw = weight.shape[1], weight.shape[2]
    if mode == "valid":
        if kh > h or kw > w:
            raise ValueError(f"weight's kernels {(kh, kw)} are larger than the input's images "
                             f"{(h, w)}, which mode 'valid' does not allow")
        return h - kh + 1, w - kw + 1
    if mode == "full":
        return h + kh - 1, w + kw - 1
    return h, w


def _run(input, weight, mode, boundary, fillvalue, method, precision, convolve):
    from ._perimage import PerImagePlan

    n, c, h, w = input.shape
    prec = precision or precision_for(input.dtype)
    x = input.detach()
    if x.is_cuda:
        plan = PerImagePlan(weight.detach(), (h, w), mode=mode, boundary=boundary,
                            fillvalue=fillvalue, method=method, precision=prec,
                            convolve=convolve, device="cuda")
        out = plan(x.contiguous())
    else:
        if prec == "bf16" and x.dtype == torch.bfloat16:
            prec = "fp32"  # no CPU method has bf16: fp32 arithmetic, rounded below
        xn = x.to(torch.float32).numpy() if x.dtype == torch.bfloat16 else x.numpy()
        k = weight.detach()
        kn = k.to(torch.float64).numpy()
        plan = PerImagePlan(kn, (h, w), mode=mode, boundary=boundary, fillvalue=fillvalue,
                            method=method, precision=prec, convolve=convolve, device="cpu")
        out = torch.from_numpy(np.ascontiguousarray(plan(xn)))
    return out.to(input.dtype)


def _fake(input, weight, mode, boundary, fillvalue, method, precision):
    oh, ow = _check(input, weight, mode, boundary, method, precision)
    return input.new_empty((input.shape[0], input.shape[1], oh, ow))


@torch.library.custom_op("tensorconv::correlate2d", mutates_args=())
def _correlate2d(input: Tensor, weight: Tensor, mode: str, boundary: str, fillvalue: float,
                 method: str, precision: Optional[str]) -> Tensor:
    _check(input, weight, mode, boundary, method, precision)
    return _run(input, weight, mode, boundary, fillvalue, method, precision, False)


@torch.library.custom_op("tensorconv::convolve2d", mutates_args=())
def _convolve2d(input: Tensor, weight: Tensor, mode: str, boundary: str, fillvalue: float,
                method: str, precision: Optional[str]) -> Tensor:
    _check(input, weight, mode, boundary, method, precision)
    return _run(input, weight, mode, boundary, fillvalue, method, precision, True)


torch.library.register_fake("tensorconv::correlate2d")(_fake)
torch.library.register_fake("tensorconv::convolve2d")(_fake)


def _index_map(n, before, after, boundary: str, device) -> Tensor:
    """Source index of every padded position, as tensorconv._arrays.boundary_indices gives it
    (np.pad's 'wrap' / 'symmetric'), by torch ops so that symbolic sizes trace."""
    i = torch.arange(-before, n + after, device=device)
    if boundary == "wrap":
        return torch.remainder(i, n)
    m = torch.remainder(i, 2 * n)
    return torch.where(m < n, m, 2 * n - 1 - m)


def _pad(x: Tensor, pads, boundary: str, fillvalue: float) -> Tensor:
    """The padded input the valid correlation reads (differentiable torch ops)."""
    (t, b), (l, r) = pads
    if t == b == l == r == 0:
        return x
    if boundary == "fill":
        return nn.functional.pad(x, (l, r, t, b), value=float(fillvalue))
    h, w = x.shape[-2:]
    ri = _index_map(h, t, b, boundary, x.device)
    ci = _index_map(w, l, r, boundary, x.device)
    return x.index_select(2, ri).index_select(3, ci)


def _fold(gp: Tensor, shape, pads, boundary: str) -> Tensor:
    """The adjoint of _pad for 'wrap' / 'symm': every padded row / column's gradient added onto
    the image row / column it was read from."""
    (t, b), (l, r) = pads
    n, c, h, w = shape
    ri = _index_map(h, t, b, boundary, gp.device)
    ci = _index_map(w, l, r, boundary, gp.device)
    rows = gp.new_zeros((n, c, h, gp.shape[3])).index_add(2, ri, gp)
    return gp.new_zeros((n, c, h, w)).index_add(3, ci, rows)


def _setup_context(ctx, inputs, output):
    input, weight, mode, boundary, fillvalue, method, precision = inputs
    ctx.args = (mode, boundary, fillvalue, method, precision)
    ctx.save_for_backward(input if ctx.needs_input_grad[1] else None,
                          weight if ctx.needs_input_grad[0] else None)
    ctx.in_shape = tuple(input.shape)
    ctx.k_shape = tuple(weight.shape)
    ctx.k_dtype = weight.dtype


def _backward(ctx, grad, convolve: bool):
    input, weight = ctx.saved_tensors
    mode, boundary, fillvalue, method, precision = ctx.args
    boundary = _api._check_boundary(boundary)
    _, kh, kw = ctx.k_shape
    pads = _api._pads(mode, kh, kw, convolve)
    fwd, adj = (_convolve2d, _correlate2d) if convolve else (_correlate2d, _convolve2d)
    grad = grad.contiguous()
    gx = gw = None
    if ctx.needs_input_grad[0]:
        if boundary == "fill":  # the adjoint's padding is the op's own in the adjoint mode
            gx = adj(grad, weight, _ADJOINT_MODE[mode], "fill", 0.0, method, precision)
        else:
            gp = adj(grad, weight, "full", "fill", 0.0, method, precision)
            gx = _fold(gp, ctx.in_shape, pads, boundary)
    if ctx.needs_input_grad[1]:
        n, c = ctx.in_shape[:2]
        xp = _pad(input, pads, boundary, fillvalue)
        ph, pw = xp.shape[-2:]
        oh, ow = grad.shape[-2:]
        if _fft_weight_grad(xp, method):
            de = _valid_xcorr_fft(xp, grad, kh, kw, precision)
        else:
            # image (n, c) of the padded input with grad_out (n, c) as its own kernel: N C kernels
            de = _correlate2d(xp.reshape(1, n * c, ph, pw), grad.reshape(n * c, oh, ow), "valid",
                              "fill", 0.0, method, precision).reshape(n, c, kh, kw).sum(0)
        gw = (de.flip(1, 2) if convolve else de).to(ctx.k_dtype)
    return gx, gw, None, None, None, None, None


def _fft_weight_grad(xp: Tensor, method: str) -> bool:
    """Whether the kernel's gradient is computed by torch.fft on the tensors' device."""
    return xp.is_cuda and method == "auto"


def _valid_xcorr_fft(xp: Tensor, g: Tensor, kh: int, kw: int, precision) -> Tensor:
    """sum_n of the valid correlation of xp[n, c] (ph x pw) with g[n, c] (oh x ow) as its
    kernel: (C, kh, kw), kh = ph - oh + 1. Circular correlation of size (ph, pw): the lags
    u < kh, v < kw read xp[i + u, j + v] with i + u <= ph - 1, so nothing wraps."""
    ph, pw = xp.shape[-2:]
    dt = torch.float64 if precision == "fp64" or xp.dtype == torch.float64 else torch.float32
    fx = torch.fft.rfft2(xp.to(dt), s=(ph, pw))
    fg = torch.fft.rfft2(g.to(dt), s=(ph, pw))
    prod = (fx * fg.conj()).sum(0)
    return torch.fft.irfft2(prod, s=(ph, pw))[:, :kh, :kw]


torch.library.register_autograd("tensorconv::correlate2d",
                                lambda ctx, g: _backward(ctx, g, False),
                                setup_context=_setup_context)
torch.library.register_autograd("tensorconv::convolve2d",
                                lambda ctx, g: _backward(ctx, g, True),
                                setup_context=_setup_context)


def _weight3(input: Tensor, weight: Tensor) -> Tensor:
    if weight.dim() == 4:
        if weight.shape[1] != 1:
            raise ValueError(f"weight of shape {tuple(weight.shape)}: a (C, 1, kh, kw) depthwise "
                             "weight has one input channel per group (groups=C)")
        return weight.reshape(weight.shape[0], weight.shape[2], weight.shape[3])
    return weight


def _autocast(input: Tensor, weight: Tensor):
    dev = input.device.type
    if dev in ("cuda", "cpu") and torch.is_autocast_enabled(dev):
        dt = torch.get_autocast_dtype(dev)
        return input.to(dt), weight.to(dt)
    return input, weight


def correlate2d(input: Tensor, weight: Tensor, mode: str = "same", boundary: str = "fill",
                fillvalue: float = 0, method: str = "auto",
                precision: Optional[str] = None) -> Tensor:
    """Depthwise correlation: ``out[n, c] = scipy.signal.correlate2d(input[n, c], weight[c],
    mode, boundary, fillvalue)``.

    A registered op (``tensorconv::correlate2d``) with a fake kernel and autograd, so
    ``torch.compile(fullgraph=True)`` and ``torch.export`` trace it.

    Parameters
    ----------
    input : Tensor
        (N, C, H, W), on the CPU or a CUDA device; float16, bfloat16, float32 or float64.
    weight : Tensor
        (C, kh, kw) or (C, 1, kh, kw), same device and dtype.
    mode : {'same', 'full', 'valid'}, optional
    boundary : {'fill', 'wrap', 'symm'}, optional
    fillvalue : float, optional
    method : str, optional
        'auto' or a registry method (`tensorconv.methods`).
    precision : str, optional
        Default from the dtype (`precision_for`).

    Returns
    -------
    Tensor
        (N, C, H', W'); differentiable with respect to `input` and `weight`.

    Raises
    ------
    ValueError
        A channel count that does not match, a kernel larger than the image in 'valid' mode,
        tensors on different devices; also at trace time under torch.compile.
    TypeError
        Tensors of different or non-floating dtypes.

    Examples
    --------
    >>> import torch
    >>> import tensorconv.torch as tct
    >>> x = torch.ones(1, 2, 4, 4, dtype=torch.float64, requires_grad=True)
    >>> w = torch.ones(2, 3, 3, dtype=torch.float64)
    >>> y = tct.correlate2d(x, w)              # mode 'same', boundary fill 0
    >>> y.shape, y[0, 0, 1, 1].item(), y[0, 0, 0, 0].item()
    (torch.Size([1, 2, 4, 4]), 9.0, 4.0)
    >>> y.sum().backward(); x.grad[0, 0, 0, 0].item()
    4.0
    """
    weight = _weight3(input, weight)
    input, weight = _autocast(input, weight)
    return _correlate2d(input, weight, mode, boundary, float(fillvalue), method, precision)


def convolve2d(input: Tensor, weight: Tensor, mode: str = "same", boundary: str = "fill",
               fillvalue: float = 0, method: str = "auto",
               precision: Optional[str] = None) -> Tensor:
    """Depthwise convolution: `correlate2d` with each kernel flipped (scipy.signal.convolve2d
    per channel); the same arguments, op (``tensorconv::convolve2d``) and gradients.

    Examples
    --------
    >>> import torch
    >>> import tensorconv.torch as tct
    >>> x = torch.zeros(1, 1, 3, 3, dtype=torch.float64); x[0, 0, 1, 1] = 1.0
    >>> w = torch.arange(9.0, dtype=torch.float64).reshape(1, 3, 3)
    >>> tct.convolve2d(x, w)[0, 0]               # an impulse gives the kernel back
    tensor([[0., 1., 2.],
            [3., 4., 5.],
            [6., 7., 8.]], dtype=torch.float64)
    """
    weight = _weight3(input, weight)
    input, weight = _autocast(input, weight)
    return _convolve2d(input, weight, mode, boundary, float(fillvalue), method, precision)


def _pair(v, name: str) -> tuple:
    if isinstance(v, int):
        return v, v
    try:
        a, b = v
        return int(a), int(b)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an int or a pair of ints, got {v!r}") from None


class Conv2dDepthwise(nn.Module):
    """A drop-in for nn.Conv2d(C, C, k, padding=..., groups=C, bias=...) computed by tensorconv:
    the same parameters (weight (C, 1, kh, kw), bias (C,)), initialisation and state_dict.

    padding 0 / 'valid' -> mode 'valid'; (kh // 2, kw // 2) for odd kernels or 'same' -> mode
    'same'; (kh - 1, kw - 1) -> mode 'full' (output larger than the input, as conv2d gives).
    padding_mode 'zeros' -> boundary fill 0; 'circular' -> wrap. 'reflect' (torch's mirror
    without the edge) and 'replicate' have no scipy boundary and are refused, as are stride,
    dilation, groups != C, out_channels != in_channels: a ValueError naming the argument.

    Examples
    --------
    >>> import torch
    >>> import tensorconv.torch as tct
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> ref = torch.nn.Conv2d(4, 4, 5, padding=2, groups=4, dtype=torch.float64)
    >>> m = tct.Conv2dDepthwise(4, 4, 5, padding=2, groups=4, dtype=torch.float64)
    >>> _ = m.load_state_dict(ref.state_dict())
    >>> x = torch.randn(2, 4, 16, 16, dtype=torch.float64)
    >>> torch.allclose(m(x), ref(x))
    True
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None, *, method: str = "auto",
                 precision: Optional[str] = None):
        super().__init__()
        if out_channels != in_channels:
            raise ValueError(f"out_channels ({out_channels}) must equal in_channels "
                             f"({in_channels}): a depthwise convolution has one kernel per channel")
        if groups != in_channels:
            raise ValueError(f"groups must be in_channels ({in_channels}) for a depthwise "
                             f"convolution, got groups={groups}")
        kh, kw = _pair(kernel_size, "kernel_size")
        if _pair(stride, "stride") != (1, 1):
            raise ValueError(f"stride must be 1, got stride={stride!r}")
        if _pair(dilation, "dilation") != (1, 1):
            raise ValueError(f"dilation must be 1, got dilation={dilation!r}")
        if padding == "same":
            mode = "same"
        elif padding == "valid":
            mode = "valid"
        else:
            ph, pw = _pair(padding, "padding")
            if (ph, pw) == (0, 0):
                mode = "valid"
            elif (ph, pw) == (kh - 1, kw - 1):
                mode = "full"
            elif (ph, pw) == (kh // 2, kw // 2) and kh % 2 == 1 and kw % 2 == 1:
                mode = "same"
            else:
                raise ValueError(f"padding={padding!r} with kernel_size {(kh, kw)} has no scipy "
                                 "mode: use 0, (kh - 1, kw - 1), 'same' or, for odd kernels, "
                                 "(kh // 2, kw // 2)")
        boundaries = {"zeros": "fill", "circular": "wrap"}
        if padding_mode not in boundaries:
            raise ValueError(f"padding_mode={padding_mode!r} is not supported: 'zeros' (fill) "
                             "and 'circular' (wrap) map onto scipy boundaries; torch's "
                             "'reflect' omits the edge, which scipy's 'symm' repeats, and "
                             "'replicate' has no scipy boundary")
        self.in_channels = self.out_channels = self.groups = in_channels
        self.kernel_size = (kh, kw)
        self.padding = padding
        self.padding_mode = padding_mode
        self.mode, self.boundary = mode, boundaries[padding_mode]
        self.method, self.precision = method, precision
        kw_ = {"device": device, "dtype": dtype}
        self.weight = nn.Parameter(torch.empty((in_channels, 1, kh, kw), **kw_))
        self.bias = nn.Parameter(torch.empty(in_channels, **kw_)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """nn.Conv2d's initialisation."""
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.kernel_size[0] * self.kernel_size[1]
            bound = 1 / math.sqrt(fan_in)
            nn.init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"padding={self.padding!r}, groups={self.groups}, bias={self.bias is not None}, "
                f"padding_mode={self.padding_mode!r}, method={self.method!r}")

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() != 4:
            raise ValueError(f"input must be (N, C, H, W), got shape {tuple(input.shape)}")
        y = correlate2d(input, self.weight, self.mode, self.boundary, 0.0, self.method,
                        self.precision)
        if self.bias is not None:
            y = y + self.bias.to(y.dtype).reshape(1, -1, 1, 1)
        return y
