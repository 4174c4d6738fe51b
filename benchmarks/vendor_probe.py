"""Hashes of the steps of tests/test_openblas.py's MLP-with-Adam workload, to run on an Intel
and an AMD CPU and compare (docs/history.md, 2026-12-01: the workload differs across vendors).
Prints the Adam result (foreach and not) and three pointwise ops Adam uses."""

import hashlib

import memrl  # noqa: F401  (the pin before torch loads)

# isort: split
import torch

from memrl.runtime import set_torch_threads

set_torch_threads(1)


def h(*ts):
    d = hashlib.sha256()
    for t in ts:
        d.update(t.detach().contiguous().numpy().tobytes())
    return d.hexdigest()[:12]


out = []
for kw in ({}, {"foreach": False}):
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Linear(17, 256),
        torch.nn.ReLU(),
        torch.nn.Linear(256, 256),
        torch.nn.ReLU(),
        torch.nn.Linear(256, 1),
    )
    x = torch.randn(256, 17, generator=torch.Generator().manual_seed(3))
    y = torch.randn(256, 1, generator=torch.Generator().manual_seed(4))
    opt = torch.optim.Adam(net.parameters(), lr=3e-4, **kw)
    for _ in range(100):
        opt.zero_grad()
        ((net(x) - y) ** 2).mean().backward()
        opt.step()
    out.append(f"{kw or 'foreach'}={h(*net.parameters())}")
g = torch.Generator().manual_seed(5)
a = torch.randn(70000, generator=g)
b = torch.randn(70000, generator=g)
out.append(
    "lerp="
    + h(a.clone().lerp_(b, 0.1))
    + " lerpfe="
    + h(torch._foreach_lerp([a.clone()], [b], 0.1)[0])
)
out.append("addcmul=" + h(a.clone().mul_(0.999).addcmul_(b, b, value=0.001)))
print(" ".join(out))
