"""The OpenBLAS recurrent layers compute torch's layers: outputs, final states and every
gradient (inputs, initial states, weights, biases) equal in float64 to rounding."""

import pytest
import torch as th
from torch import nn

from memrl.memory.blas_rnn import BlasGRU, BlasLSTM


@pytest.mark.parametrize(("ours", "theirs"), [(BlasLSTM, nn.LSTM), (BlasGRU, nn.GRU)])
def test_a_blas_layer_is_torchs_layer(ours, theirs):
    th.manual_seed(3)
    mine = ours(5, 7).double()
    th.manual_seed(3)
    ref = theirs(5, 7, batch_first=True).double()
    for name, p in ref.named_parameters():  # the same seed draws the same weights
        assert th.equal(p, getattr(mine, name)), name
    x = th.randn(4, 6, 5, dtype=th.float64)
    state = th.randn(1, 4, 7, dtype=th.float64)
    states = (state, th.randn(1, 4, 7, dtype=th.float64)) if ours is BlasLSTM else state
    outs, grads = [], []
    for layer in (mine, ref):
        xi = x.clone().requires_grad_()
        si = (
            tuple(s.clone().requires_grad_() for s in states)
            if ours is BlasLSTM
            else (states.clone().requires_grad_())
        )
        y, last = layer(xi, si)
        last = last if ours is BlasLSTM else (last,)
        # every output enters the loss, so every backward path is used
        loss = (y * th.linspace(-1, 1, 7, dtype=th.float64)).square().sum()
        loss = loss + sum((s * (k + 2)).sum() for k, s in enumerate(last))
        loss.backward()
        outs.append([y, *last])
        inputs = [xi, *(si if isinstance(si, tuple) else (si,))]
        grads.append([t.grad for t in inputs] + [p.grad for _, p in layer.named_parameters()])
    for a, b in zip(outs[0], outs[1], strict=True):
        assert a.shape == b.shape and th.allclose(a, b, atol=1e-12, rtol=0)
    for a, b in zip(grads[0], grads[1], strict=True):
        assert a.shape == b.shape and th.allclose(a, b, atol=1e-12, rtol=0)


def test_a_blas_layer_learns_in_float32():
    th.manual_seed(0)
    layer, head = BlasLSTM(3, 16), nn.Linear(16, 1)
    opt = th.optim.Adam([*layer.parameters(), *head.parameters()], lr=1e-2)
    x = th.randn(32, 10, 3)
    target = x[:, :1, :1].expand(-1, 10, -1)  # recall the first input
    z = th.zeros(1, 32, 16)
    first = None
    for _ in range(200):
        y, _ = layer(x, (z, z))
        loss = (head(y) - target).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        first = first if first is not None else loss.item()
    assert loss.item() < 0.1 * first


@pytest.mark.parametrize("ours", [BlasLSTM, BlasGRU])
def test_off_the_cpu_a_blas_layer_is_torchs_layer_with_its_weights(ours):
    # the path another device takes, run here on the CPU: torch's layer with our parameters
    th.manual_seed(1)
    layer = ours(3, 4).double()
    x = th.randn(2, 5, 3, dtype=th.float64)
    z = th.zeros(1, 2, 4, dtype=th.float64)
    state = (z, z) if ours is BlasLSTM else z
    y_blas, _ = layer(x, state)
    y_torch, _ = layer._torch(x, state)
    assert th.allclose(y_blas, y_torch, atol=1e-12, rtol=0)
