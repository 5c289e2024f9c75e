"""tensorconv.torch: depthwise ops against torch.nn.functional.conv2d(groups=C) and scipy,
gradients (gradcheck / gradgradcheck), opcheck, torch.compile(fullgraph=True), export,
Conv2dDepthwise as nn.Conv2d's drop-in, and the argument checks (eager and at trace time)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.signal as ss

torch = pytest.importorskip("torch", reason="tensorconv.torch needs PyTorch (not installed)")
F = torch.nn.functional

import tensorconv.torch as tct  # noqa: E402
from bounds import mape_bound  # noqa: E402

from tensorconv.metrics import mape  # noqa: E402

BOUNDARIES = ["fill", "wrap", "symm"]
MODES = ["same", "full", "valid"]
# opcheck's own aot_dispatch test reads .grad of non-leaf tensors it makes (a torch warning)
_OPCHECK_WARNING = pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor")
OPS = [torch.ops.tensorconv.correlate2d.default, torch.ops.tensorconv.convolve2d.default]


def _cuda():
    import tensorconv as tc

    if not (torch.cuda.is_available() and tc.cuda_available()):
        pytest.skip("needs a CUDA device with tensorconv's CUDA build and torch CUDA")
    return "cuda"


def _conv2d_ref(x, w, mode):
    """torch's depthwise conv2d (a correlation) in scipy's modes, fill 0, odd kernels."""
    kh, kw = w.shape[-2:]
    pad = {"same": (kh // 2, kw // 2), "full": (kh - 1, kw - 1), "valid": (0, 0)}[mode]
    return F.conv2d(x, w.reshape(w.shape[0], 1, kh, kw), padding=pad, groups=x.shape[1])


def _scipy_ref(x, w, mode, boundary, fill, convolve):
    f = ss.convolve2d if convolve else ss.correlate2d
    x, w = x.detach().double().cpu().numpy(), w.detach().double().cpu().numpy()
    return np.stack([np.stack([f(x[n, c], w[c], mode, boundary, fill)
                               for c in range(x.shape[1])]) for n in range(x.shape[0])])


def _data(shape=(2, 3, 9, 8), k=(5, 3), dtype=torch.float64, device="cpu", seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g, dtype=torch.float64).to(device, dtype)
    w = torch.randn((shape[1],) + k, generator=g, dtype=torch.float64).to(device, dtype)
    return x.detach().requires_grad_(), w.detach().requires_grad_()


# ---- forward ---------------------------------------------------------------------------------
@pytest.mark.parametrize("boundary", BOUNDARIES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("convolve", [False, True])
def test_forward_vs_scipy(boundary, mode, convolve):
    x, w = _data(k=(4, 3))  # an even kernel height: scipy's 'same' centring
    f = tct.convolve2d if convolve else tct.correlate2d
    out = f(x, w, mode, boundary, 0.5)
    ref = _scipy_ref(x, w, mode, boundary, 0.5, convolve)
    assert out.shape == ref.shape and out.dtype == torch.float64
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape,k,mode", [((1, 1, 7, 12), (3, 5), "same"),
                                          ((2, 4, 6, 5), (9, 11), "full"),
                                          ((3, 2, 15, 6), (7, 1), "valid"),
                                          ((1, 3, 1, 9), (1, 9), "same")])
def test_forward_and_grads_vs_conv2d(shape, k, mode):
    x, w = _data(shape, k)
    out = tct.correlate2d(x, w, mode)
    x2, w2 = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    ref = _conv2d_ref(x2, w2, mode)
    torch.testing.assert_close(out, ref, rtol=1e-10, atol=1e-12)
    g = torch.randn_like(ref)
    gx, gw = torch.autograd.grad(out, (x, w), g)
    rx, rw = torch.autograd.grad(ref, (x2, w2), g)
    torch.testing.assert_close(gx, rx, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(gw, rw, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype,precision", [(torch.float32, "fp32"), (torch.float16, "fp16fp32"),
                                             (torch.bfloat16, "fp32")])
def test_low_precision_cpu_vs_float64(dtype, precision):
    x, w = _data((2, 3, 20, 17), (5, 5), dtype=dtype)
    xd, wd = x.detach().abs().double(), w.detach().abs().double()  # the papers' positive data
    out = tct.correlate2d(x.detach().abs(), w.detach().abs(), "same")
    assert out.dtype == dtype
    ref = _conv2d_ref(xd, wd, "same")
    # bf16 on the CPU: fp32 arithmetic, rounded to bfloat16 (2^-9 relative)
    bound = 0.5 if dtype == torch.bfloat16 else mape_bound("direct", precision)
    assert mape(out.double().numpy(), ref.numpy()) <= bound


def test_precision_map():
    assert tct.precision_for(torch.float64) == "fp64"
    assert tct.precision_for(torch.float32) == "fp32"
    assert tct.precision_for(torch.float16) == "fp16fp32"
    assert tct.precision_for(torch.bfloat16) == "bf16"
    with pytest.raises(TypeError, match="int64"):
        tct.precision_for(torch.int64)


def test_weight_layouts_and_method():
    x, w = _data()
    a = tct.correlate2d(x, w)
    b = tct.correlate2d(x, w.unsqueeze(1))
    c = tct.correlate2d(x, w, method="fft_cpu")
    torch.testing.assert_close(a, b)
    torch.testing.assert_close(a, c, rtol=1e-9, atol=1e-11)


# ---- gradients ---------------------------------------------------------------------------------
@pytest.mark.parametrize("boundary", BOUNDARIES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("convolve", [False, True])
def test_gradcheck(boundary, mode, convolve):
    x, w = _data((2, 2, 7, 6), (4, 3))
    f = tct.convolve2d if convolve else tct.correlate2d
    fn = lambda a, b: f(a, b, mode, boundary, 0.5)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (x, w))
    assert torch.autograd.gradgradcheck(fn, (x, w))


@pytest.mark.parametrize("precision", [None, "fp64"])
def test_fft_weight_gradient_is_the_valid_correlation(precision):
    """The kernel gradient's FFT form (taken for CUDA tensors with method 'auto') against the op's
    own valid correlation, summed over N, on the CPU in float64."""
    from tensorconv import torch as tt

    x, _ = _data((3, 4, 13, 11), (1, 1), seed=5)
    g, _ = _data((3, 4, 9, 8), (1, 1), seed=6)  # grad_out: kernels (5, 4) result
    got = tt._valid_xcorr_fft(x.detach(), g.detach(), 5, 4, precision)
    ref = tt._correlate2d(x.detach().reshape(1, 12, 13, 11), g.detach().reshape(12, 9, 8),
                          "valid", "fill", 0.0, "auto", None).reshape(3, 4, 5, 4).sum(0)
    assert got.shape == (4, 5, 4) and got.dtype == torch.float64
    torch.testing.assert_close(got, ref, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("boundary", BOUNDARIES)
@pytest.mark.parametrize("convolve", [False, True])
def test_gradcheck_fft_weight_gradient(monkeypatch, boundary, convolve):
    """gradcheck / gradgradcheck through the FFT form of the kernel gradient (forced on the
    CPU: the form is the same torch code on any device)."""
    from tensorconv import torch as tt

    monkeypatch.setattr(tt, "_fft_weight_grad", lambda xp, method: True)
    x, w = _data((2, 2, 7, 6), (4, 3), seed=7)
    f = tct.convolve2d if convolve else tct.correlate2d
    fn = lambda a, b: f(a, b, "same", boundary, 0.5)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (x, w))
    assert torch.autograd.gradgradcheck(fn, (x, w))


def test_gradcheck_large_symm_pads():
    # kernel larger than the image in 'full' mode: pads wider than the image fold several times
    x, w = _data((1, 2, 3, 4), (7, 9))
    for boundary in ("symm", "wrap"):
        assert torch.autograd.gradcheck(lambda a, b: tct.correlate2d(a, b, "full", boundary),
                                        (x, w))


@pytest.mark.parametrize("which", [0, 1])
def test_requires_grad_on_one_argument(which):
    x, w = _data()
    (x if which else w).requires_grad_(False)
    y = tct.correlate2d(x, w, "same", "symm")
    y.sum().backward()
    assert (x.grad is None) == bool(which) and (w.grad is None) == (not which)


# ---- the ops as torch sees them ----------------------------------------------------------------
@_OPCHECK_WARNING
@pytest.mark.parametrize("op", OPS, ids=["correlate2d", "convolve2d"])
@pytest.mark.parametrize("boundary", BOUNDARIES)
def test_opcheck(op, boundary):
    x, w = _data((2, 2, 7, 6), (3, 3))
    torch.library.opcheck(op, (x, w, "same", boundary, 0.5, "auto", None))
    torch.library.opcheck(op, (x.detach(), w.detach(), "full", boundary, 0.0, "auto", None))


def test_compile_fullgraph_training_matches_conv2d():
    torch.manual_seed(0)
    C, k = 4, 7
    ref = torch.nn.Sequential(torch.nn.Conv2d(C, C, k, padding=k // 2, groups=C),
                              torch.nn.Tanh(), torch.nn.Conv2d(C, 1, 1)).double()
    ours = torch.nn.Sequential(tct.Conv2dDepthwise(C, C, k, padding=k // 2, groups=C),
                               torch.nn.Tanh(), torch.nn.Conv2d(C, 1, 1)).double()
    ours.load_state_dict(ref.state_dict())
    step = torch.compile(lambda m, x: F.mse_loss(m(x), x.mean(1, keepdim=True)), fullgraph=True)
    opt_r = torch.optim.SGD(ref.parameters(), lr=0.1)
    opt_o = torch.optim.SGD(ours.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(1)
    for _ in range(4):
        x = torch.randn(2, C, 16, 13, generator=g, dtype=torch.float64)
        for m, opt in ((ref, opt_r), (ours, opt_o)):
            opt.zero_grad()
            loss = F.mse_loss(m(x), x.mean(1, keepdim=True)) if m is ref else step(m, x)
            loss.backward()
            opt.step()
            if m is ref:
                lr = loss.item()
        assert abs(loss.item() - lr) <= 1e-10 * max(1.0, abs(lr))


def test_export():
    m = tct.Conv2dDepthwise(3, 3, 5, padding=2, groups=3, dtype=torch.float64)
    x = torch.randn(2, 3, 9, 8, dtype=torch.float64)
    ep = torch.export.export(m, (x,))
    assert "tensorconv.correlate2d" in ep.graph_module.code
    torch.testing.assert_close(ep.module()(x), m(x))


def test_autocast_cpu_bf16():
    x, w = _data((1, 2, 8, 8), (3, 3), dtype=torch.float32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = tct.correlate2d(x, w)
    assert y.dtype == torch.bfloat16


# ---- Conv2dDepthwise -----------------------------------------------------------------------------
@pytest.mark.parametrize("padding_mode,boundary", [("zeros", "fill"), ("circular", "wrap")])
@pytest.mark.parametrize("bias", [True, False])
def test_module_matches_conv2d(padding_mode, boundary, bias):
    torch.manual_seed(2)
    ref = torch.nn.Conv2d(3, 3, (5, 3), padding=(2, 1), groups=3, bias=bias,
                          padding_mode=padding_mode).double()
    m = tct.Conv2dDepthwise(3, 3, (5, 3), padding=(2, 1), groups=3, bias=bias,
                            padding_mode=padding_mode, dtype=torch.float64)
    m.load_state_dict(ref.state_dict())
    assert m.boundary == boundary
    x = torch.randn(2, 3, 11, 9, dtype=torch.float64)
    torch.testing.assert_close(m(x), ref(x), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kwargs,name", [
    ({"stride": 2}, "stride"), ({"dilation": 2}, "dilation"), ({"groups": 1}, "groups"),
    ({"padding_mode": "reflect"}, "padding_mode"), ({"padding_mode": "replicate"}, "padding_mode"),
    ({"padding": 1}, "padding"), ({"out_channels": 6}, "out_channels")])
def test_module_refuses(kwargs, name):
    args = {"in_channels": 3, "out_channels": 3, "kernel_size": 5, "padding": 2, "groups": 3}
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        tct.Conv2dDepthwise(**args)


# ---- bad input: eagerly and at trace time -------------------------------------------------------
def _bad_cases():
    x = torch.randn(2, 3, 8, 8)
    return [
        ("channels", x, torch.randn(2, 3, 3), ValueError, "3 channels"),
        ("valid", x, torch.randn(3, 9, 3), ValueError, "valid"),
        ("dtype", x, torch.randn(3, 3, 3, dtype=torch.float64), TypeError, "dtype"),
        ("ndim", x[0], torch.randn(3, 3, 3), ValueError, "input"),
        ("groups", x, torch.randn(3, 2, 3, 3), ValueError, "groups"),
    ]


@pytest.mark.parametrize("case", _bad_cases(), ids=lambda c: c[0])
def test_bad_input_eager(case):
    name, x, w, exc, msg = case
    mode = "valid" if name == "valid" else "same"
    with pytest.raises(exc, match=msg):
        tct.correlate2d(x, w, mode)


def _chain(e):
    while e is not None:
        yield e
        e = e.__cause__ or e.__context__


@pytest.mark.parametrize("case", _bad_cases()[:3], ids=lambda c: c[0])
def test_bad_input_at_trace_time(case):
    name, x, w, exc, msg = case
    mode = "valid" if name == "valid" else "same"
    torch._dynamo.reset()
    f = torch.compile(lambda a, b: tct.correlate2d(a, b, mode), fullgraph=True)
    with pytest.raises(Exception) as info:
        f(x, w)
    assert any(isinstance(e, exc) and msg in str(e) for e in _chain(info.value))


def test_bad_input_devices():
    dev = _cuda()
    x, w = torch.randn(1, 2, 8, 8), torch.randn(2, 3, 3, device=dev)
    with pytest.raises(ValueError, match="device"):
        tct.correlate2d(x, w)


# ---- GPU (H200) ----------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("boundary", BOUNDARIES)
@pytest.mark.parametrize("mode", MODES)
def test_gpu_gradcheck(boundary, mode):
    dev = _cuda()
    x, w = _data((2, 2, 9, 7), (4, 3), device=dev)
    fn = lambda a, b: tct.correlate2d(a, b, mode, boundary, 0.5)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (x, w))
    assert torch.autograd.gradgradcheck(fn, (x, w))


@pytest.mark.gpu
@_OPCHECK_WARNING
@pytest.mark.parametrize("op", OPS, ids=["correlate2d", "convolve2d"])
def test_gpu_opcheck(op):
    dev = _cuda()
    x, w = _data((2, 2, 9, 7), (3, 3), device=dev)
    torch.library.opcheck(op, (x, w, "same", "symm", 0.5, "auto", None))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,precision", [(torch.float32, "fp32"), (torch.float16, "fp16fp32"),
                                             (torch.bfloat16, "bf16"), (torch.float64, "fp64")])
@pytest.mark.parametrize("k", [3, 31])
def test_gpu_vs_conv2d(dtype, precision, k):
    dev = _cuda()
    g = torch.Generator().manual_seed(3)
    x = torch.rand(2, 8, 64, 48, generator=g, dtype=torch.float64)
    w = torch.rand(8, k, k, generator=g, dtype=torch.float64)
    xd, wd = x.to(dev, dtype).requires_grad_(), w.to(dev, dtype).requires_grad_()
    out = tct.correlate2d(xd, wd, "same")
    ref = _conv2d_ref(x.to(dev), w.to(dev), "same")
    method = "fft" if precision != "bf16" else "naive_shmem"
    bound = max(mape_bound(method, precision), mape_bound("fft", "fp32"))
    assert mape(out.detach().double().cpu().numpy(), ref.cpu().numpy()) <= bound
    gy = torch.rand(out.shape, generator=g, dtype=torch.float64)
    gx, gw = torch.autograd.grad(out, (xd, wd), gy.to(dev, dtype))
    xr, wr = x.to(dev).requires_grad_(), w.to(dev).requires_grad_()
    rx, rw = torch.autograd.grad(_conv2d_ref(xr, wr, "same"), (xr, wr), gy.to(dev))
    assert mape(gx.double().cpu().numpy(), rx.cpu().numpy()) <= 4 * bound
    assert mape(gw.double().cpu().numpy(), rw.cpu().numpy()) <= 4 * bound


@pytest.mark.gpu
def test_gpu_stream_and_compile():
    dev = _cuda()
    torch.manual_seed(4)
    m = tct.Conv2dDepthwise(16, 16, 31, padding=15, groups=16, device=dev)
    ref = torch.nn.Conv2d(16, 16, 31, padding=15, groups=16, device=dev)
    ref.load_state_dict(m.state_dict())
    x = torch.randn(4, 16, 64, 64, device=dev)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # tensorconv launches on the caller's current stream
        y = torch.compile(m, fullgraph=True)(x)
    torch.cuda.current_stream().wait_stream(s)
    torch.testing.assert_close(y, ref(x), rtol=1e-4, atol=1e-4)
    with torch.autocast("cuda", dtype=torch.float16):
        assert m(x).dtype == torch.float16


def test_import_tensorconv_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, tensorconv; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
