"""Exact RTRL for the element-wise LSTM (memrl.memory.rtrl): its gradient is backprop's."""

from __future__ import annotations

import torch as th

from memrl.memory.rtrl import ELSTM


def _loss_weights(T: int, H: int) -> th.Tensor:
    return th.randn(T, H, dtype=th.float64)


def test_rtrl_gradient_equals_backpropagation_through_time():
    th.manual_seed(0)
    B, T, n_in, H = 3, 12, 4, 5
    core = ELSTM(n_in, H, forget_bias=1.0).double()
    x = th.randn(B, T, n_in, dtype=th.float64)
    w = _loss_weights(T, H)  # a loss at every step: sum_t <w_t, tanh(c_t)>

    # backpropagation through time
    y, _ = core(x, core.initial_state(B).double())
    (th.tanh(y) * w).sum().backward()
    bptt = [p.grad.clone() for p in core.parameters()]
    core.zero_grad(set_to_none=True)

    # real-time recurrent learning: forward only, the loss's gradient at each step
    c, sens = core.initial_state(B).double(), tuple(s.double() for s in core.sensitivities(B))
    for t in range(T):
        c, sens = core.rtrl_step(x[:, t], c, sens)
        leaf = c.clone().requires_grad_()
        (th.tanh(leaf) * w[t]).sum().backward()
        core.accumulate(leaf.grad, sens)
    rtrl = [p.grad for p in core.parameters()]
    for a, b in zip(bptt, rtrl, strict=True):
        assert th.allclose(a, b, rtol=1e-10, atol=1e-12)


def test_the_step_and_sequence_modes_agree():
    th.manual_seed(1)
    core = ELSTM(3, 4)
    x = th.randn(2, 6, 3)
    y, c = core(x, core.initial_state(2))
    s = core.initial_state(2)
    for t in range(6):
        out, s = core.step(x[:, t], s)
        assert th.allclose(out, y[:, t])
    assert th.allclose(s, c)
