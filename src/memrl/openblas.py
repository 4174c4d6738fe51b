"""torch's matrix products, square root and inverse error function on numpy's pinned code:
one code path on every x86-64 CPU.

Under the pinned kernel set (:mod:`memrl.isa`) torch's float products still run on MKL's
``COMPATIBLE`` branch, which Intel documents as giving the same results on Intel and
non-Intel CPUs. Measured, it does not always: ``kernel_fingerprints.py`` finds a 20-step
Adam update of a 17-256-256-1 MLP different between an Intel Xeon and an AMD EPYC under
that branch (its 256x256x256 products, exp and log agree), and the memory card's ``window``
and ``lstm`` jobs' losses differ in their last bits (issue 52).

:func:`route` registers CPU kernels for the ATen operators that call BLAS (``mm``,
``addmm``, ``bmm``, ``baddbmm``, ``addbmm``, ``addmv``, ``dot``, ``vdot``, their in-place and
``out=`` forms), for the slow 2-D convolution (im2col, then one product; with oneDNN and
NNPACK off, every convolution here) and for the two LAPACK calls our jobs make
(``linalg.eigh``, ``linalg.qr``): each computes with numpy, whose BLAS is OpenBLAS pinned to
its Haswell kernels (``OPENBLAS_CORETYPE``, one thread: compile-time block sizes, the same
code on either vendor). Autograd's backward formulas call the same operators, so one
registration covers SB3's networks, our agents and the cores. Attention runs on its math
path (products through ``bmm``), not the fused CPU kernels that call MKL directly.

With the products routed the MLP's update still differed across the vendors (2026-12-01):
its one op left on MKL was Adam's ``sqrt``, which torch computes with MKL's vector math, and
that is not correctly rounded under ``COMPATIBLE`` (a unit in the last place off for 1 float
in 6 on an Intel Xeon; its bytes follow the branch). ``sqrt`` runs on numpy's (IEEE's one
correctly rounded answer), and ``erfinv`` (``nn.init.trunc_normal_``), the other MKL
vector-math op a job calls whose bytes follow MKL's branch and that no fingerprint compared
across vendors, on scipy's scalar code. MKL keeps ``exp``, ``log`` and ``tanh``: under
``COMPATIBLE`` their fingerprints agree across the two vendors (``docs/kernels.md``).

``tests/test_openblas.py`` checks with ``MKL_VERBOSE`` that a job makes no MKL BLAS or
LAPACK call, that the products equal numpy's, that gradients match torch's own and that
``sqrt`` is correctly rounded.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import torch as th
from torch.nn import functional as F

_LIB: th.library.Library | None = None
_NP = {th.float32, th.float64, th.complex64, th.complex128}


def _np(t: th.Tensor) -> np.ndarray:
    if t.is_conj() or t.is_neg():
        t = t.resolve_conj().resolve_neg()
    return t.detach().numpy()


def _matmul(a: th.Tensor, b: th.Tensor) -> th.Tensor:
    """``a @ b`` (2-D or batched 3-D, or matrix-vector) on numpy's BLAS, in ``a``'s dtype
    (half types in float32, then rounded back)."""
    dtype = a.dtype
    if dtype in _NP or not dtype.is_floating_point:
        x, y = _np(a), _np(b)
        if x.ndim >= 2 and y.ndim >= 2 and x.shape[-1] == 1:  # an outer product: one
            return th.from_numpy(np.multiply(x, y))  # rounding each, as gemm's; ~2x faster
        return th.from_numpy(np.ascontiguousarray(np.matmul(x, y)))
    return _matmul(a.float(), b.float()).to(dtype)


def _affine(out: th.Tensor, bias: th.Tensor, beta, alpha) -> th.Tensor:
    """``beta * bias + alpha * out`` as BLAS defines it (``beta = 0``: bias ignored)."""
    if alpha != 1:
        out = out * alpha
    if beta == 0:
        return out
    return out + (bias if beta == 1 else bias * beta)


def mm(a, b):
    return _matmul(a, b)


def addmm(bias, a, b, *, beta=1, alpha=1):
    return _affine(_matmul(a, b), bias, beta, alpha)


def bmm(a, b):
    return _matmul(a, b)


def baddbmm(bias, a, b, *, beta=1, alpha=1):
    return _affine(_matmul(a, b), bias, beta, alpha)


def addbmm(bias, a, b, *, beta=1, alpha=1):
    return _affine(_matmul(a, b).sum(0), bias, beta, alpha)


def addmv(bias, a, v, *, beta=1, alpha=1):
    return _affine(_matmul(a, v), bias, beta, alpha)


def dot(a, b):
    return _matmul(a, b).reshape(())


def vdot(a, b):
    return _matmul(a.conj(), b).reshape(())


def _out(fn: Callable) -> Callable:
    """The ``out=`` form of an operator: computed, then written into ``out``."""

    def kernel(*args, out, **kwargs):
        r = fn(*args, **kwargs)
        out.resize_(r.shape).copy_(r)
        return out

    return kernel


def _inplace(fn: Callable) -> Callable:
    def kernel(self, *args, **kwargs):
        return self.copy_(fn(self, *args, **kwargs))

    return kernel


# ---------------------------------------------------------------- convolution and LAPACK
def _conv_cols(x, kernel_size, stride, padding):
    return F.unfold(x, kernel_size, padding=padding, stride=stride)  # (N, C*kh*kw, L)


def slow_conv2d(x, weight, kernel_size, bias, stride, padding):
    """The slow 2-D convolution: im2col (a copy), then the weights times the columns."""
    n, _, h, w = x.shape
    kh, kw = kernel_size
    ho = (h + 2 * padding[0] - kh) // stride[0] + 1
    wo = (w + 2 * padding[1] - kw) // stride[1] + 1
    cols = _conv_cols(x, kernel_size, stride, padding)
    out = _matmul(weight.reshape(weight.shape[0], -1), cols)  # (N, O, L)
    if bias is not None:
        out = out + bias[:, None]
    return out.reshape(n, weight.shape[0], ho, wo)


def slow_conv2d_backward(grad, x, weight, kernel_size, stride, padding, output_mask):
    n, o = grad.shape[:2]
    g = grad.reshape(n, o, -1)  # (N, O, L)
    w2 = weight.reshape(o, -1)  # (O, C*kh*kw)
    gx = gw = gb = None
    if output_mask[0]:
        cols = _matmul(w2.t(), g)  # (N, C*kh*kw, L)
        gx = F.fold(cols, x.shape[-2:], kernel_size, padding=padding, stride=stride)
    if output_mask[1]:
        cols = _conv_cols(x, kernel_size, stride, padding)
        flat_g = g.transpose(0, 1).reshape(o, -1)  # (O, N*L)
        flat_c = cols.transpose(1, 2).reshape(-1, cols.shape[1])  # (N*L, C*kh*kw)
        gw = _matmul(flat_g, flat_c).reshape(weight.shape)
    if output_mask[2]:
        gb = g.sum((0, 2))
    return gx, gw, gb


# ---------------------------------------------------------------- square root
def sqrt(a):
    """IEEE's correctly rounded square root (numpy's: one ``sqrtps`` a lane), where torch
    calls MKL's vector math, whose ``COMPATIBLE`` branch is not correctly rounded (16.6% of
    a million floats a unit in the last place off on an Intel Xeon) and whose bytes follow
    the vendor: Adam's denominator, the only op of the MLP workload not already routed that
    differed across vendors (docs/kernels.md)."""
    if not (a.dtype.is_floating_point or a.dtype.is_complex):
        a = a.to(th.get_default_dtype())
    if a.dtype not in _NP:
        return sqrt(a.float()).to(a.dtype)
    x = _np(a)
    out = np.empty(x.shape, x.dtype)  # a 0-d input stays 0-d (np.sqrt would return a scalar)
    return th.from_numpy(np.sqrt(x, out=out))


def erfinv(a):
    """The inverse error function on scipy's scalar code (Boost's ``erf_inv``, no dispatch),
    where torch calls MKL's vector math (its bytes follow MKL's branch: unmeasured across
    vendors). ``nn.init.trunc_normal_`` calls it (S5's ``lecun_normal``)."""
    from scipy import special

    if a.dtype not in (th.float32, th.float64):
        return erfinv(a.float()).to(a.dtype if a.dtype.is_floating_point else th.float32)
    return th.from_numpy(np.asarray(special.erfinv(_np(a)), dtype=_np(a).dtype).reshape(a.shape))


def linalg_eigh(a, uplo="L", compute_v=True):
    w, v = np.linalg.eigh(_np(a), UPLO=uplo)
    return th.from_numpy(w), th.from_numpy(np.ascontiguousarray(v)) if compute_v else th.empty(0)


def linalg_qr(a, mode="reduced"):
    q, r = np.linalg.qr(_np(a), mode="complete" if mode == "complete" else "reduced")
    if mode == "r":
        q = np.empty(0, r.dtype)
    return th.from_numpy(np.ascontiguousarray(q)), th.from_numpy(np.ascontiguousarray(r))


KERNELS: dict[str, Callable] = {
    "mm": mm,
    "mm.out": _out(mm),
    "addmm": addmm,
    "addmm.out": _out(addmm),
    "addmm_": _inplace(addmm),
    "bmm": bmm,
    "bmm.out": _out(bmm),
    "baddbmm": baddbmm,
    "baddbmm.out": _out(baddbmm),
    "baddbmm_": _inplace(baddbmm),
    "addbmm": addbmm,
    "addbmm.out": _out(addbmm),
    "addbmm_": _inplace(addbmm),
    "addmv": addmv,
    "addmv.out": _out(addmv),
    "addmv_": _inplace(addmv),
    "dot": dot,
    "vdot": vdot,
    "_slow_conv2d_forward": slow_conv2d,
    "_slow_conv2d_backward.output_mask": slow_conv2d_backward,
    "sqrt": sqrt,
    "sqrt.out": _out(sqrt),
    "sqrt_": _inplace(sqrt),
    "erfinv": erfinv,
    "erfinv.out": _out(erfinv),
    "erfinv_": _inplace(erfinv),
    "_linalg_eigh": linalg_eigh,
    "linalg_qr": linalg_qr,
}


def route() -> None:
    """Register :data:`KERNELS` as the CPU kernels of their ATen operators (once per
    process) and send attention through its math path. Called with the thread limit in every
    job's process (:func:`memrl.runtime.set_torch_threads`)."""
    global _LIB
    if _LIB is not None:
        return
    lib = th.library.Library("aten", "IMPL")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Oo]verrid")
        for name, fn in KERNELS.items():
            lib.impl(name, fn, "CPU")
    _LIB = lib
    # the fused CPU attention and the transformer fast path call MKL's gemm directly
    th.backends.cuda.enable_flash_sdp(False)
    th.backends.mha.set_fastpath_enabled(False)


def routed() -> bool:
    """Whether this process's products run on OpenBLAS (:func:`route` was called)."""
    return _LIB is not None
