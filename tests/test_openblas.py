"""torch's products on numpy's pinned OpenBLAS (:mod:`memrl.openblas`): no MKL call left in
a job's arithmetic, the same bytes as numpy's products, gradients as torch's own.

MKL's ``COMPATIBLE`` branch gave different bytes on an Intel Xeon and an AMD EPYC for a
small MLP's Adam update (issue 52, ``kernel_fingerprints.py``): the first test fails on the
old path on any CPU (it sees the SGEMM calls), the reference test on a CPU of the other
vendor than the one that computed it.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch as th
from torch.nn import functional as F

from memrl import isa, openblas

WORKLOAD = r"""
import hashlib, sys
import memrl
import torch
from memrl.runtime import set_torch_threads
set_torch_threads(1)

def h(*ts):
    d = hashlib.sha256()
    for t in ts:
        d.update(t.detach().contiguous().numpy().tobytes())
    return d.hexdigest()[:16]

torch.manual_seed(0)
# kernel_fingerprints.py's "mlp adam x20": different on Intel and AMD under MKL COMPATIBLE
net = torch.nn.Sequential(torch.nn.Linear(17, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                          torch.nn.ReLU(), torch.nn.Linear(256, 1))
opt = torch.optim.Adam(net.parameters(), lr=3e-4)
x = torch.randn(256, 17, generator=torch.Generator().manual_seed(3))
y = torch.randn(256, 1, generator=torch.Generator().manual_seed(4))
for _ in range(5 * 20):  # the tool times its 20 steps 5 times: 100 steps
    opt.zero_grad(); ((net(x) - y) ** 2).mean().backward(); opt.step()
print("mlp", h(*net.parameters()))
if sys.argv[1] == "all":
    conv = torch.nn.Sequential(torch.nn.Conv2d(4, 16, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                               torch.nn.Linear(16 * 8 * 8, 6))
    out = conv(torch.randn(8, 4, 10, 10)); out.square().mean().backward()
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, 0.0, batch_first=True, norm_first=True)
    enc = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(6)
    enc(torch.randn(3, 6, 32), mask=mask, is_causal=True).sum().backward()
    enc.eval()
    with torch.no_grad():
        enc(torch.randn(3, 6, 32), mask=mask, is_causal=True)
    lstm = torch.nn.LSTM(8, 16); lstm(torch.randn(5, 2, 8))[0].sum().backward()
    a = torch.randn(6, 6, dtype=torch.complex128)
    torch.linalg.eigh(a @ a.mH)
    torch.nn.init.orthogonal_(torch.empty(16, 8))
    torch.dot(torch.randn(5), torch.randn(5)), torch.randn(3, 4) @ torch.randn(4)
    torch.einsum("bh,bkh->kh", torch.randn(2, 3), torch.randn(2, 4, 3))
"""


def _run(what: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", WORKLOAD, what],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )


@pytest.mark.skipif(isa.products() != "openblas", reason="this level keeps torch's kernels")
def test_a_job_makes_no_mkl_blas_or_lapack_call():
    out = _run("all", MKL_VERBOSE="1")
    calls = [
        line.split("(")[0]
        for line in (out.stdout + out.stderr).splitlines()
        if line.startswith("MKL_VERBOSE") and "oneMKL" not in line  # the version banner
    ]
    assert calls == [], f"{len(calls)} MKL calls, e.g. {sorted(set(calls))[:5]}"


# the workload's bytes on the route (products and sqrt), computed on an Intel Xeon (family 6,
# model 207; 2026-12-02). Before: unrouted, under MKL COMPATIBLE (kernel_fingerprints.py's
# "mlp adam x20", ../shared/tools/reference), and with the products routed but MKL's sqrt
# (an AMD EPYC on 2026-11-27, this Xeon on 2026-12-01): the old paths fail this test on
# either vendor
MLP_ADAM_ROUTED = "52121a29ada01e10"
MLP_ADAM_BEFORE = {
    "MKL, AMD EPYC": "ad7417ca528ca723",
    "MKL, Intel Xeon (AVX-512)": "aa821ae24752edf1",
    "products routed, AMD EPYC": "cd3d9dfee84eb033",
    "products routed, Intel Xeon": "e4b94ca0894e8324",
}


@pytest.mark.skipif(isa.level() != "x86-64-v3", reason="the reference is the default level's")
def test_the_mlp_update_gives_the_bytes_computed_on_the_other_vendor():
    assert MLP_ADAM_ROUTED not in MLP_ADAM_BEFORE.values()
    assert _run("mlp").stdout.split() == ["mlp", MLP_ADAM_ROUTED]


def test_sqrt_is_correctly_rounded():
    """MKL's vector-math sqrt, torch's own on the CPU, is a unit in the last place off for 1 in
    6 floats under MKL COMPATIBLE (and follows the vendor: the MLP workload's only
    unrouted op that differed). IEEE's sqrt is one answer on every CPU."""
    _routed()
    g = th.Generator().manual_seed(5)
    a = th.randn(1_000_003, generator=g).abs() * 1e-3
    want = np.sqrt(a.numpy().astype(np.float64)).astype(np.float32)  # exact, then one rounding
    cases = {
        "contiguous": (a.sqrt(), want),
        "strided": (th.sqrt(a[::2]), want[::2]),
        "in place": (a.clone().sqrt_(), want),
        "foreach (Adam's)": (th._foreach_sqrt([a])[0], want),
    }
    wrong = {k: int((got.numpy() != w).sum()) for k, (got, w) in cases.items()}
    assert wrong == dict.fromkeys(cases, 0)
    assert th.sqrt(th.tensor(4.0)).shape == () and th.tensor([4, 9]).sqrt().dtype == th.float32


def _routed() -> None:
    openblas.route()
    assert openblas.routed()


@pytest.mark.parametrize(("m", "k", "n"), [(256, 17, 256), (1, 64, 64), (64, 1, 3), (5, 0, 4)])
def test_a_product_is_numpys_to_the_byte(m, k, n):
    _routed()
    g = th.Generator().manual_seed(m + k + n)
    a, b = th.randn(m, k, generator=g), th.randn(k, n, generator=g)
    want = np.matmul(a.numpy(), b.numpy())
    assert (a @ b).numpy().tobytes() == want.tobytes()
    col = a.T.contiguous().T  # a column-major view: numpy's BLAS call for the same view
    assert (col @ b).numpy().tobytes() == np.matmul(col.numpy(), b.numpy()).tobytes()


def _grads(fn, *shapes, dtype=th.float64):
    g = th.Generator().manual_seed(1)
    xs = [th.randn(*s, generator=g, dtype=dtype, requires_grad=True) for s in shapes]
    out = fn(*xs)
    out.square().sum().backward()
    return [out.detach(), *[x.grad for x in xs]]


CASES = {
    "linear 3-D": (lambda x, w, b: F.linear(x, w, b), (4, 5, 7), (3, 7), (3,)),
    "addmm scaled": (
        lambda c, a, b: th.addmm(c, a, b, beta=0.5, alpha=2.0),
        (4, 3),
        (4, 6),
        (6, 3),
    ),
    "baddbmm": (lambda c, a, b: th.baddbmm(c, a, b, alpha=0.5), (2, 4, 3), (2, 4, 5), (2, 5, 3)),
    "matmul broadcast": (lambda a, b: a @ b, (2, 3, 4, 5), (5, 2)),
    "addmv": (lambda c, a, v: th.addmv(c, a, v), (4,), (4, 6), (6,)),
    "conv2d strided": (
        lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1),
        (2, 3, 9, 8),
        (5, 3, 3, 3),
        (5,),
    ),
    "attention": (
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
        (2, 3, 5, 4),
        (2, 3, 6, 4),
        (2, 3, 6, 4),
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_values_and_gradients_are_torchs_own(case):
    """In float64 (rounding apart), against torch's kernels in a process left unrouted."""
    fn, *shapes = CASES[case]
    _routed()
    ours = _grads(fn, *shapes)
    code = (
        "import sys, torch, pickle\nfrom torch.nn import functional as F\n"
        f"g = torch.Generator().manual_seed(1)\nshapes = {shapes!r}\n"
        "xs = [torch.randn(*s, generator=g, dtype=torch.float64, requires_grad=True) for s in shapes]\n"
        f"fn = {CASE_SOURCE[case]}\nout = fn(*xs); out.square().sum().backward()\n"
        "sys.stdout.buffer.write(pickle.dumps([out.detach().numpy()] + [x.grad.numpy() for x in xs]))"
    )
    import pickle

    theirs = pickle.loads(
        subprocess.run([sys.executable, "-c", code], capture_output=True, check=True).stdout
    )
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a.numpy(), b, rtol=1e-10, atol=1e-12)


CASE_SOURCE = {
    "linear 3-D": "lambda x, w, b: F.linear(x, w, b)",
    "addmm scaled": "lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0)",
    "baddbmm": "lambda c, a, b: torch.baddbmm(c, a, b, alpha=0.5)",
    "matmul broadcast": "lambda a, b: a @ b",
    "addmv": "lambda c, a, v: torch.addmv(c, a, v)",
    "conv2d strided": "lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1)",
    "attention": "lambda q, k, v: F.scaled_dot_product_attention(q, k, v)",
}


def test_eigh_and_qr_solve_their_problems():
    _routed()
    g = th.Generator().manual_seed(2)
    a = th.randn(6, 6, dtype=th.complex128, generator=g)
    s = a @ a.mH
    w, v = th.linalg.eigh(s)
    np.testing.assert_allclose((v @ th.diag(w.to(s.dtype)) @ v.mH).numpy(), s.numpy(), atol=1e-10)
    m = th.randn(9, 4, generator=g, dtype=th.float64)
    q, r = th.linalg.qr(m)
    np.testing.assert_allclose((q @ r).numpy(), m.numpy(), atol=1e-12)
    assert q.shape == (9, 4) and r.shape == (4, 4)


def test_the_routed_code_is_part_of_every_job_key_and_its_docs_are_not(monkeypatch):
    from pathlib import Path

    from memrl import fingerprint

    src = Path(openblas.__file__).read_text()
    key = isa._key("x86-64-v3")
    edits = {
        "a docstring": src.replace("one code path on every", "one code path on any"),
        "a comment": src.replace("# the fused CPU attention", "# fused CPU attention"),
        "the code": src.replace("if alpha != 1:", "if alpha != 2:"),
    }
    moved = {}
    for what, text in edits.items():
        assert text != src, what
        monkeypatch.setattr(fingerprint, "read_source", lambda path, t=text: t)
        moved[what] = isa._key("x86-64-v3") != key
    assert moved == {"a docstring": False, "a comment": False, "the code": True}


@pytest.mark.skipif(isa.products() != "openblas", reason="this level keeps torch's kernels")
def test_a_real_job_makes_no_mkl_call(tmp_path):
    """The memory card's decision transformer (embeddings, attention, layer norm, AdamW):
    unrouted, 529 MKL calls on the smoke profile."""
    cmd = [sys.executable, "-m", "memrl", "run", "recurrent_off_policy", "card dt"]
    cmd += ["--seed", "0", "--profile", "smoke", "--store", str(tmp_path)]
    out = subprocess.run(
        cmd, env={**os.environ, "MKL_VERBOSE": "1"}, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-2000:]
    calls = [x for x in (out.stdout + out.stderr).splitlines() if x.startswith("MKL_VERBOSE")]
    assert [x for x in calls if "oneMKL" not in x] == []
