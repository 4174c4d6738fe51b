"""Recurrent memory cores with one interface: sequence mode for training, step mode for acting.

Every core maps inputs ``x`` (batch, time, in) and a state to outputs
(batch, time, hidden) and the state after the last step; ``step`` does one
time step. :class:`GRUCore` and :class:`LSTMCore` are torch's one-layer GRU and LSTM with
their products on the pinned OpenBLAS (:mod:`memrl.memory.blas_rnn`: under the pinned
kernel set torch's own layers lose oneDNN's fusion and run 1.4-2.1x slower);
:class:`FFMCore` is Fast and Forgetful Memory (Morad et al. 2023), written from
the paper's equations:

    [x~, g_in, thru, g_out] = Linear(x)
    S_t = gamma * S_{t-1} + (x~ * sigmoid(g_in))          S: m x c complex, gamma_jk = exp(a_j + i b_k), a_j < 0
    z_t = Linear([Re S_t, Im S_t])
    y_t = LayerNorm(z_t) * sigmoid(g_out) + thru * (1 - sigmoid(g_out))

In sequence mode FFM's and S5's diagonal recurrences are solved by one scan
(:func:`diagonal_scan`): in closed form within chunks of ``L <= 16`` steps,
``S_t = sum_{i<=t} gamma^(t-i) u_i``, a lower-triangular mix of decaying powers only
(float32 real arithmetic), then a parallel scan over the chunks' end states. No Python
loop over time.
"""

from __future__ import annotations

import math
from typing import Annotated, NamedTuple

import torch as th
from pydantic import AfterValidator
from torch import nn
from torch.nn import functional as F

from memrl.memory.blas_rnn import BlasGRU, BlasLSTM


class GRUCore(nn.Module):
    """``nn.GRU`` (one layer, batch first; :class:`BlasGRU`); state: (1, batch, hidden)."""

    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.rnn = BlasGRU(input_size, hidden_size)

    def initial_state(self, batch: int) -> th.Tensor:
        return th.zeros(1, batch, self.hidden_size)

    def forward(self, x: th.Tensor, state: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        return self.rnn(x, state)

    def step(self, x: th.Tensor, state: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        y, state = self.rnn(x[:, None], state)
        return y[:, 0], state


class LSTMCore(GRUCore):
    """``nn.LSTM`` (one layer, batch first; :class:`BlasLSTM`); state: a pair (h, c), each
    (1, batch, hidden)."""

    def __init__(self, input_size: int, hidden_size: int) -> None:
        nn.Module.__init__(self)
        self.hidden_size = hidden_size
        self.rnn = BlasLSTM(input_size, hidden_size)

    def initial_state(self, batch: int) -> tuple[th.Tensor, th.Tensor]:
        z = th.zeros(1, batch, self.hidden_size)
        return z, z.clone()


class FFMCore(nn.Module):
    """Fast and Forgetful Memory.

    The complex state is kept as real and imaginary parts (a trailing axis of 2),
    so everything runs in float32 real arithmetic.

    :param memory_size: ``m``, traces per context (decay rates ``a_j``).
    :param context_size: ``c``, oscillation frequencies ``b_k`` per trace.
    :param max_period: as the reference (FFA in smorad/ffm): decays ``a`` initialised evenly
        from ``-(limit - 0.01)`` to ``ln(0.01) / max_period`` (the slowest trace falls to 1%
        after ``max_period`` steps) and kept in ``[-limit, -1e-8]``, ``limit = ln(float64
        max) / max_period - 0.01`` (0.683 at 1024: the reference's overflow guard, kept
        though our chunked closed form needs none); frequencies spread over periods
        1..max_period.
    :param chunk: time steps per closed-form chunk (its mix costs ``chunk`` products per step).
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        memory_size: int = 32,
        context_size: int = 8,
        max_period: int = 1024,
        chunk: int = 16,
    ) -> None:
        super().__init__()
        if int(chunk) < 1:
            raise ValueError(f"chunk must be >= 1, got {chunk}")
        self.hidden_size, self.m, self.c, self.chunk = hidden_size, memory_size, context_size, chunk
        self.pre = nn.Linear(input_size, 2 * memory_size + 2 * hidden_size)
        self.mix = nn.Linear(2 * memory_size * context_size, hidden_size)
        self.norm = nn.LayerNorm(hidden_size)
        self.limit = math.log(th.finfo(th.float64).max) / max_period - 0.01
        slowest = max(min(-1e-6, math.log(0.01) / max_period), -self.limit + 0.01)
        self.a = nn.Parameter(th.linspace(-self.limit + 0.01, slowest, memory_size))
        self.freq = nn.Parameter(2 * math.pi / th.linspace(1.0, max_period, context_size))

    def initial_state(self, batch: int) -> th.Tensor:
        """(batch, m, c, 2): real and imaginary parts of the traces."""
        return th.zeros(batch, self.m, self.c, 2)

    def _decay(self) -> th.Tensor:
        """``a_j`` (m,), projected into ``[-limit, -1e-8]`` as the reference does (the stored
        value too, so a step past the bound comes back at once)."""
        with th.no_grad():
            self.a.clamp_(-self.limit, -1e-8)
        return self.a

    def _split(self, x: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        u, g_in, thru, g_out = self.pre(x).split(
            [self.m, self.m, self.hidden_size, self.hidden_size], -1
        )
        return u * th.sigmoid(g_in), thru, th.sigmoid(g_out)

    def _readout(self, s: th.Tensor, thru: th.Tensor, gate: th.Tensor) -> th.Tensor:
        return self.norm(self.mix(s.flatten(-3))) * gate + thru * (1 - gate)

    def _log_gamma(self) -> tuple[th.Tensor, th.Tensor]:
        """``log gamma_jk = a_j + i b_k`` flattened over (m, c): real and imaginary parts."""
        m, c = self.m, self.c
        return self._decay()[:, None].expand(m, c).reshape(-1), self.freq.expand(m, c).reshape(-1)

    def forward(self, x: th.Tensor, state: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """``S_t = gamma S_{t-1} + u_t`` over the sequence by :func:`diagonal_scan` (the scan
        S5 uses: the m x c traces are its P complex states), the carried state entering as
        ``gamma S_0`` added to the first input."""
        u, thru, gate = self._split(x)  # u: (B, T, m)
        B, T, _ = u.shape
        log_re, log_im = self._log_gamma()
        b = u[..., None].expand(B, T, self.m, self.c).reshape(B, T, -1)  # real inputs
        g_re, g_im = _power(log_re, log_im, 1)
        s0_re, s0_im = state[..., 0].reshape(B, 1, -1), state[..., 1].reshape(B, 1, -1)
        first_re = b[:, :1] + g_re * s0_re - g_im * s0_im
        first_im = g_re * s0_im + g_im * s0_re
        s_re, s_im = diagonal_scan(
            log_re,
            log_im,
            th.cat([first_re, b[:, 1:]], 1),
            th.cat([first_im, th.zeros_like(b[:, 1:])], 1),
            chunk=self.chunk,
        )
        s = th.stack([s_re, s_im], -1).reshape(B, T, self.m, self.c, 2)
        return self._readout(s, thru, gate), s[:, -1]

    def step(self, x: th.Tensor, state: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        u, thru, gate = self._split(x)  # u: (B, m)
        g_re, g_im = (g.view(self.m, self.c) for g in _power(*self._log_gamma(), 1))
        re, im = state[..., 0], state[..., 1]
        s = th.stack([g_re * re - g_im * im + u[..., None], g_re * im + g_im * re], -1)
        return self._readout(s, thru, gate), s


class WindowCore(nn.Module):
    """A context of the last ``context`` inputs, no memory beyond it (a frame stack of K).

    ``y_t = MLP([x_{t-K+1}, ..., x_t])`` with zeros before the start: the agent sees
    exactly ``K`` steps back, so it can recall events at most ``K - 1`` steps old
    (short-term memory in Cherepanov et al.'s terms). The state is the last
    ``K - 1`` inputs, (batch, K - 1, in).
    """

    def __init__(self, input_size: int, hidden_size: int, context: int = 4) -> None:
        super().__init__()
        if int(context) < 1:
            raise ValueError(f"context must be >= 1, got {context}")
        self.input_size, self.hidden_size, self.context = input_size, hidden_size, int(context)
        self.net = nn.Sequential(nn.Linear(self.context * input_size, hidden_size), nn.ReLU())

    def initial_state(self, batch: int) -> th.Tensor:
        return th.zeros(batch, self.context - 1, self.input_size)

    def forward(self, x: th.Tensor, state: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        full = th.cat([state.to(x), x], 1)  # (B, K - 1 + T, in)
        windows = full.unfold(1, self.context, 1)  # (B, T, in, K), oldest first along K
        y = self.net(windows.transpose(-1, -2).flatten(-2))
        return y, full[:, full.shape[1] - (self.context - 1) :]

    def step(self, x: th.Tensor, state: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        y, state = self(x[:, None], state)
        return y[:, 0], state


def hippo_diagonal(n: int) -> tuple[th.Tensor, th.Tensor]:
    """Eigenvalues and eigenvectors of the normal part of HiPPO-LegS (the S5 paper's
    initialisation): ``S = -(HiPPO + p p^T)`` is skew-symmetric plus ``-1/2 I``, so its
    eigenvalues are ``-1/2 + i w`` with ``w`` from ``eigh(-i S)``.

    :return: ``Lambda`` (n,) complex64 and ``V`` (n, n) complex64, ``S = V diag(Lambda) V^*``.
    """
    k = th.arange(n, dtype=th.float64)
    q = th.sqrt(2 * k + 1)
    a = -(th.tril(q[:, None] * q[None, :]) - th.diag(k))  # -HiPPO-LegS
    p = th.sqrt(k + 0.5)
    s = a + p[:, None] * p[None, :]
    w, v = th.linalg.eigh(s.to(th.complex128) * -1j)
    lam = th.diagonal(s).mean() + 1j * w
    return lam.to(th.complex64), v.to(th.complex64)


def _power(log_re: th.Tensor, log_im: th.Tensor, d: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
    """``lambda^d`` as (real, imag) from ``log lambda = log_re + i log_im``; ``d`` broadcasts."""
    mag = th.exp(log_re * d)
    return mag * th.cos(log_im * d), mag * th.sin(log_im * d)


def _hillis_steele(
    log_re: th.Tensor,
    log_im: th.Tensor,
    b_re: th.Tensor,
    b_im: th.Tensor,
    keep: th.Tensor | None = None,
) -> tuple[th.Tensor, th.Tensor]:
    """``log2(T)`` rounds of the associative operator ``(a_i, b_i) . (a_j, b_j) = (a_j a_i,
    a_j b_i + b_j)`` with ``a_t = lambda * keep_t``: the running product of ``a`` is
    ``lambda^s`` times the product of the ``keep`` flags, so only the flags are scanned."""
    T, s = b_re.shape[1], 1
    while s < T:
        p_re, p_im = _power(log_re, log_im, s)  # lambda^s, (P,)
        prev_re = F.pad(b_re, (0, 0, s, 0))[:, :T]  # b_{t-s}, zeros before the start
        prev_im = F.pad(b_im, (0, 0, s, 0))[:, :T]
        c_re, c_im = p_re * prev_re - p_im * prev_im, p_re * prev_im + p_im * prev_re
        if keep is not None:
            c_re, c_im = c_re * keep, c_im * keep
            keep = keep * F.pad(keep, (0, 0, s, 0), value=1.0)[:, :T]
        b_re, b_im = b_re + c_re, b_im + c_im
        s *= 2
    return b_re, b_im


def diagonal_scan(
    log_re: th.Tensor,
    log_im: th.Tensor,
    b_re: th.Tensor,
    b_im: th.Tensor,
    keep: th.Tensor | None = None,
    chunk: int = 16,
) -> tuple[th.Tensor, th.Tensor]:
    """All states of ``x_t = lambda * keep_t * x_{t-1} + b_t`` (``x_{-1} = 0``) along axis 1.

    Complex numbers travel as (real, imag) pairs of (B, T, P) tensors; ``lambda`` (P,) as its
    logarithm. ``keep`` (B, T, 1) is 0 where a new episode starts (the reset). Without resets
    the scan is solved in chunks of ``chunk`` steps: inside a chunk, one batched matrix
    product with the lower-triangular ``lambda^(t-i)`` (only decaying powers, so float32 is
    safe); across chunks, a parallel scan over the chunks' end states with ``lambda^chunk``.
    With resets: a parallel scan over all steps (Hillis-Steele). No Python loop over time.
    """
    if keep is not None:
        return _hillis_steele(log_re, log_im, b_re, b_im, keep)
    B, T, P = b_re.shape
    L = min(chunk, T)
    n = -(-T // L)
    d = th.arange(L, dtype=b_re.dtype, device=b_re.device)
    gap = d[:, None] - d[None, :]  # t - i within a chunk
    w_re, w_im = _power(log_re[:, None, None], log_im[:, None, None], gap.clamp(min=0))
    w_re, w_im = w_re * (gap >= 0), w_im * (gap >= 0)  # (P, L, L)
    w = th.cat([th.cat([w_re, -w_im], 2), th.cat([w_im, w_re], 2)], 1)  # (P, 2L, 2L)
    bb = th.stack([b_re, b_im])  # (2, B, T, P)
    bb = F.pad(bb, (0, 0, 0, n * L - T)).reshape(2, B, n, L, P)
    bb = bb.permute(4, 0, 3, 1, 2).reshape(P, 2 * L, B * n)
    x = (w @ bb).reshape(P, 2, L, B, n).permute(1, 3, 4, 2, 0)  # (2, B, n, L, P)
    # each chunk's end state from a zero start, then the true end states: S_k = lambda^L S_k-1 + e_k
    s_re, s_im = _hillis_steele(log_re * L, log_im * L, x[0, :, :, -1], x[1, :, :, -1])
    c_re = F.pad(s_re, (0, 0, 1, 0))[:, :n, None]  # the state entering chunk k: (B, n, 1, P)
    c_im = F.pad(s_im, (0, 0, 1, 0))[:, :n, None]
    p_re, p_im = _power(log_re, log_im, (d + 1)[:, None])  # lambda^(t+1), (L, P)
    x_re = x[0] + p_re * c_re - p_im * c_im
    x_im = x[1] + p_re * c_im + p_im * c_re
    return x_re.reshape(B, n * L, P)[:, :T], x_im.reshape(B, n * L, P)[:, :T]


def lecun_normal(shape: tuple[int, ...], fan_in: int) -> th.Tensor:
    """flax's ``lecun_normal``: a standard normal truncated at +-2, rescaled to unit variance,
    times ``1 / sqrt(fan_in)``."""
    x = nn.init.trunc_normal_(th.empty(shape), 0.0, 1.0, -2.0, 2.0)
    return x / 0.87962566103423978 / math.sqrt(fan_in)


class S5Layer(nn.Module):
    """One S5 layer (Smith et al. 2023) as popjaxrl's POPGym agent configures it
    (zero-order hold, conjugate symmetry, ``full_glu``, no normalisation):

        x_t = Lambda_bar * x_{t-1} * (1 - d_t) + B_bar u_t      x: P complex states, d_t: reset
        y_t = 2 Re(C x_t) + D * u_t
        out = u + W1 gelu(y) * sigmoid(W2 gelu(y))

    with ``Lambda_bar = exp(Lambda dt)``, ``B_bar = (Lambda_bar - 1) / Lambda * B``.
    ``Lambda`` starts at the first half of HiPPO-N's eigenvalues (the other half are their
    conjugates), ``B = V^* B0``, ``C = C0 V`` with ``B0, C0`` lecun-normal as the reference
    draws them (lindermanlab/S5 ``ssm.py``: B0 of shape (2P, H), C0 of shape (H, 2P, 2), so
    C0's fan-in is 2P * H), ``D ~ N(0, 1)``, ``log dt ~ U[log 0.001, log 0.1]``. The state is (batch, P, 2): real and imaginary parts.
    The big tensors stay real (complex products written out), as in :class:`FFMCore`.
    """

    def __init__(self, width: int, state_size: int) -> None:
        super().__init__()
        if state_size < 2 or state_size % 2:
            raise ValueError(f"state_size must be even and >= 2, got {state_size}")
        self.P = state_size // 2
        lam, v = hippo_diagonal(state_size)
        lam, v = lam[: self.P], v[:, : self.P]
        self.lambda_re = nn.Parameter(lam.real.clone())
        self.lambda_im = nn.Parameter(lam.imag.clone())
        # lecun_normal (flax: a normal truncated at 2 sd, rescaled to keep the sd) over the
        # reference's shapes: B (2P, H), fan-in 2P; C (H, 2P, 2), fan-in 2P * H
        b0 = lecun_normal((state_size, width), state_size)
        c0 = th.complex(*lecun_normal((2, width, state_size), state_size * width))
        self.b = nn.Parameter(th.view_as_real(v.conj().T @ b0.to(v)))  # (P, width, 2)
        self.c = nn.Parameter(th.view_as_real(c0 @ v))  # (width, P, 2)
        self.d = nn.Parameter(th.randn(width))
        self.log_dt = nn.Parameter(
            th.rand(self.P) * (math.log(0.1) - math.log(0.001)) + math.log(0.001)
        )
        self.out1, self.out2 = nn.Linear(width, width), nn.Linear(width, width)

    def discrete(self) -> tuple[th.Tensor, th.Tensor]:
        """``log Lambda_bar = Lambda dt`` (P,) and ``B_bar`` (P, width), complex (zero-order
        hold)."""
        lam = th.complex(self.lambda_re, self.lambda_im)
        log_bar = lam * self.log_dt.exp()
        return log_bar, ((th.exp(log_bar) - 1) / lam)[:, None] * th.view_as_complex(self.b)

    def forward(
        self, u: th.Tensor, state: th.Tensor, resets: th.Tensor | None = None
    ) -> tuple[th.Tensor, th.Tensor]:
        log_bar, b_bar = self.discrete()
        bu_re, bu_im = (u @ th.cat([b_bar.real, b_bar.imag]).T).split(self.P, -1)  # (B, T, P)
        keep = None if resets is None else (1 - resets.to(u.dtype))[..., None]
        # the carried state enters as a_0 x_0 added to the first input
        a_re, a_im = _power(log_bar.real, log_bar.imag, 1)
        if keep is not None:
            a_re, a_im = a_re * keep[:, :1], a_im * keep[:, :1]
        x0_re, x0_im = state[:, None, :, 0], state[:, None, :, 1]  # (B, 1, P)
        first_re = bu_re[:, :1] + a_re * x0_re - a_im * x0_im
        first_im = bu_im[:, :1] + a_re * x0_im + a_im * x0_re
        x_re, x_im = diagonal_scan(
            log_bar.real,
            log_bar.imag,
            th.cat([first_re, bu_re[:, 1:]], 1),
            th.cat([first_im, bu_im[:, 1:]], 1),
            keep,
        )
        c = th.view_as_complex(self.c)  # (width, P)
        y = 2 * (th.cat([x_re, x_im], -1) @ th.cat([c.real, -c.imag], 1).T) + self.d * u
        y = F.gelu(y)
        out = u + self.out1(y) * th.sigmoid(self.out2(y))
        return out, th.stack([x_re[:, -1], x_im[:, -1]], -1)


class S5Core(nn.Module):
    """S5 for RL (Lu et al. 2023): a linear input layer, then ``layers`` S5 layers whose
    states are reset inside the parallel scan at episode boundaries (``resets`` (B, T),
    1 where a new episode starts). State: (layers, batch, P, 2).

    :param state_size: ``2P``; the layer keeps ``P`` complex states (conjugate symmetry).
    :param layers: S5 layers stacked (popjaxrl's POPGym agent: 4 of width 256, P = 128).
    """

    def __init__(self, input_size: int, hidden_size: int, state_size: int = 0, layers: int = 1):
        super().__init__()
        if int(layers) < 1:
            raise ValueError(f"layers must be >= 1, got {layers}")
        self.hidden_size, self.P = hidden_size, (state_size or hidden_size) // 2
        self.inp = nn.Linear(input_size, hidden_size)
        self.layers = nn.ModuleList(
            S5Layer(hidden_size, state_size or hidden_size) for _ in range(int(layers))
        )

    def initial_state(self, batch: int) -> th.Tensor:
        return th.zeros(len(self.layers), batch, self.P, 2)

    def forward(
        self, x: th.Tensor, state: th.Tensor, resets: th.Tensor | None = None
    ) -> tuple[th.Tensor, th.Tensor]:
        y, out = self.inp(x), []
        for layer, s in zip(self.layers, state.to(x), strict=True):
            y, s = layer(y, s, resets)
            out.append(s)
        return y, th.stack(out)

    def step(
        self, x: th.Tensor, state: th.Tensor, reset: th.Tensor | None = None
    ) -> tuple[th.Tensor, th.Tensor]:
        y, state = self(x[:, None], state, None if reset is None else reset[:, None])
        return y[:, 0], state


class CoreEntry(NamedTuple):
    """A memory core as the rest of memrl names it."""

    module: type[nn.Module]
    label: str  # in method names (``RSAC-<label>``) and RO-11's arms
    timed: str  # its row in the cores' timing job (the card's and RO-9's costs)
    k: str  # what a context K is for it: "truncation" of backpropagation, or "context" seen


# every memory core, named once: adding one is an entry here (and its module above)
CORES: dict[str, CoreEntry] = {
    "gru": CoreEntry(GRUCore, "GRU", "GRU core", "truncation"),
    "lstm": CoreEntry(LSTMCore, "LSTM", "LSTM core", "truncation"),
    "ffm": CoreEntry(FFMCore, "FFM", "FFM", "truncation"),
    "window": CoreEntry(WindowCore, "window", "window", "context"),
    "s5": CoreEntry(S5Core, "S5", "S5", "truncation"),
}


def core_name(kind: str) -> str:
    """``kind`` if :data:`CORES` holds it, else one clear error (a pydantic validator too)."""
    if kind not in CORES:
        raise ValueError(f"unknown memory core {kind!r}; choose one of {sorted(CORES)}")
    return kind


CoreName = Annotated[str, AfterValidator(core_name)]


def make_core(kind: str, input_size: int, hidden_size: int, **kwargs) -> nn.Module:
    """The core :data:`CORES` names ``kind`` (``context=K`` for the window)."""
    return CORES[core_name(kind)].module(input_size, hidden_size, **kwargs)
