"""MinAtar's network pieces in JAX (import after :func:`memrl.engines.pin.pin`), in torch's
parameter layout so that weights move between the two unchanged: a convolution's weight
``(out, in, 3, 3)``, a linear layer's ``(out, in)``.

The 3x3 convolution is one product over image patches (im2col): XLA:CPU's convolution
gradient measured 3.2 ms per batch-32 DQN update against 0.67 ms as a product (research
notes, sixth round); the arithmetic is the convolution's.

The one-frame pieces (:func:`frame_conv3x3`, :func:`frame_linear`, :func:`frame_layer_norm`,
:func:`first_argmax`) are the streaming agents' (batch 1, one compiled call per env step),
written in the forms XLA:CPU runs fastest at that size (measured on an Intel Xeon, family 6
model 207, one core): the patches one gather by a constant index (nine slices and a
concatenation are ten small kernels), a linear layer as ``w @ x`` (``x[None] @ w.T + b``
made XLA transpose the 1024x128 weight each call and emit the product as a naive loop fused
with the bias: ~100 us against ~35), the argmax as a max and a min over indices (XLA's
variadic argmax reduction costs more). Each is the batched piece's arithmetic for one frame
up to float rounding.
"""

from __future__ import annotations

import functools
import operator
from typing import Any

from memrl.engines.pin import pin

pin()  # before jax loads: XLA's flags and one core (memrl.engines.pin)

import jax
import jax.numpy as jnp
import numpy as np

Params = dict[str, Any]  # name -> array, torch's names without the module index


def conv3x3(w: jnp.ndarray, b: jnp.ndarray, x: jnp.ndarray) -> jnp.ndarray:
    """A 3x3 convolution, stride 1, no padding: ``x`` (N, C, H, W) -> (N, O, H-2, W-2)."""
    n, c, h, wd = x.shape
    patches = jnp.stack(
        [x[:, :, i : i + h - 2, j : j + wd - 2] for i in range(3) for j in range(3)], axis=2
    )  # (N, C, 9, H-2, W-2): index c*9 + 3i + j, as torch's weight (O, C, 3, 3) flattens
    cols = patches.reshape(n, c * 9, (h - 2) * (wd - 2))
    out = jnp.einsum("ok,nkp->nop", w.reshape(w.shape[0], c * 9), cols) + b[None, :, None]
    return out.reshape(n, w.shape[0], h - 2, wd - 2)


def frame_patches(shape: tuple[int, int, int]) -> np.ndarray:
    """The constant index ``(C * 9, (H-2) * (W-2))`` into a flattened frame (C, H, W) that
    gathers its 3x3 patches in :func:`conv3x3`'s order (row ``c*9 + 3i + j``)."""
    c, h, w = shape
    flat = np.arange(c * h * w).reshape(c, h, w)
    cols = [flat[:, i : i + h - 2, j : j + w - 2] for i in range(3) for j in range(3)]
    return np.stack(cols, axis=1).reshape(c * 9, (h - 2) * (w - 2))


def frame_conv3x3(w: jnp.ndarray, b: jnp.ndarray, x: jnp.ndarray) -> jnp.ndarray:
    """:func:`conv3x3` of one frame ``x`` (C, H, W) -> (O, (H-2) * (W-2)): one gather of its
    patches, one product."""
    cols = x.reshape(-1)[frame_patches(x.shape)]
    return w.reshape(w.shape[0], -1) @ cols + b[:, None]


def frame_linear(w: jnp.ndarray, b: jnp.ndarray, x: jnp.ndarray) -> jnp.ndarray:
    """:func:`linear` of one vector: ``w @ x + b``."""
    return w @ x + b


def frame_layer_norm(x: jnp.ndarray, eps: float = 1e-5) -> jnp.ndarray:
    """:func:`layer_norm` of one frame: over all its elements."""
    mean = x.mean()
    return (x - mean) / jnp.sqrt(jnp.square(x - mean).mean() + eps)


def first_argmax(q: jnp.ndarray) -> jnp.ndarray:
    """The index of the first maximum of a vector (``jnp.argmax``'s and torch's tie rule)."""
    return jnp.min(jnp.where(q == q.max(), jnp.arange(q.shape[0]), q.shape[0]))


def fold_sum(x: jnp.ndarray, ways: int = 32, least: int = 4096) -> jnp.ndarray:
    """The sum of every element of ``x``, in an order written here: while the vector has
    ``least`` elements or more and ``ways`` divides it, it is cut into ``ways`` equal parts
    added elementwise (one vectorised pass), and the rest is one reduction. XLA:CPU's own
    reduction of 131,072 floats measured ~80 us on an Intel Xeon (family 6 model 207), this
    ~25 us; the order is this function's, so it is the same code on every CPU (YNNPACK's
    fast reduction is not: :mod:`memrl.engines.pin`)."""
    a = x.reshape(-1)
    while a.size >= least and a.size % ways == 0:
        parts = a.reshape(ways, -1)
        a = functools.reduce(operator.add, [parts[i] for i in range(ways)])
    return a.sum()


K_CHUNK = 128  # the longest sum one product may run: below any x86 CPU's K block (chunked_matmul)


def chunked_matmul(a: jnp.ndarray, b: jnp.ndarray, chunk: int = K_CHUNK) -> jnp.ndarray:
    """``a @ b`` (M, K) x (K, N) with the sum over K in an order written here: K cut into
    equal runs of at most ``chunk`` (the largest divisor of K not above it), one product
    per run (a batched dot), and the partial products added in run order.

    XLA:CPU hands a long product to Eigen, which blocks K by the L1 data cache it reads at
    run time: a 32x1600x128 product is summed in blocks of 200 on an AMD EPYC with 32 KiB
    (family 25 model 1), otherwise on one with 48 KiB (family 26 model 2) and unblocked on
    an Intel Xeon with 48 KiB (family 6 model 207), so the same
    job gave other bytes (``benchmarks/engine_fingerprints.py``, "dot K block"). Eigen's
    smallest K block on an AVX2 x86 CPU with 32 KiB of L1 or more is above 128, so each run
    here is one block everywhere; the barrier keeps XLA from folding the runs' sum back
    into one product."""
    m, k = a.shape
    c = max(d for d in range(1, min(chunk, k) + 1) if k % d == 0)
    if c < min(chunk, k) // 4:
        raise ValueError(f"chunked_matmul: K = {k} has no divisor near {chunk}")
    parts = jax.lax.optimization_barrier(
        jnp.einsum("mrc,rcn->rmn", a.reshape(m, k // c, c), b.reshape(k // c, c, -1))
    )
    return functools.reduce(operator.add, [parts[i] for i in range(k // c)])


def linear(w: jnp.ndarray, b: jnp.ndarray, x: jnp.ndarray) -> jnp.ndarray:
    """``x @ w.T + b`` (torch's ``nn.Linear``)."""
    return x @ w.T + b


def layer_norm(x: jnp.ndarray, eps: float = 1e-5) -> jnp.ndarray:
    """LayerNorm over every axis but the batch, no scale or shift (torch's ``F.layer_norm``
    with ``x.shape[1:]``: the biased variance, ``eps`` inside the root)."""
    axes = tuple(range(1, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = jnp.square(x - mean).mean(axis=axes, keepdims=True)
    return (x - mean) / jnp.sqrt(var + eps)


def leaky_relu(x: jnp.ndarray, slope: float = 0.01) -> jnp.ndarray:
    """torch's ``nn.LeakyReLU()`` (slope 0.01), its gradient at 0 too (``slope``: the first
    normalised frame is all zeros, and so is every unit it reaches through zero biases)."""
    return jnp.where(x > 0, x, slope * x)


def from_torch(state: dict[str, Any], names: dict[str, str]) -> Params:
    """A torch state dict's weights as float32 arrays, each module's prefix renamed by
    ``names`` (``{"0": "conv"}``: ``0.weight`` -> ``conv.weight``); others left out."""
    out = {}
    for full, t in state.items():
        prefix, _, kind = full.rpartition(".")
        if prefix in names:
            # a copy: jnp.asarray may alias the tensor's memory, which torch updates in place
            out[f"{names[prefix]}.{kind}"] = jnp.array(t.detach().cpu().numpy(), jnp.float32)
    return out


def to_numpy(params: Params) -> dict[str, np.ndarray]:
    return {k: np.asarray(v) for k, v in params.items()}
