"""Fingerprints of small jitted workloads under the engine's pin and without it, one fresh
process each: the kernel-fingerprint idea (``../shared/tools/kernel_fingerprints.py``, for
torch) for XLA. Run it on two machines (e.g. an AMD EPYC and an Intel Xeon) and compare:
under ``pinned`` (:mod:`memrl.engines.pin`: AVX2 cap, platform-dependent math and XNNPACK
off, one core) every fingerprint should agree; the other settings show what the pin
removes on each machine.

    .venv/bin/python benchmarks/engine_fingerprints.py > fp_$(hostname).json
    .venv/bin/python benchmarks/engine_fingerprints.py --compare a.json b.json

``benchmarks/engine_fingerprints/``: outputs measured here (file name = CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

# name -> (XLA_FLAGS or None for the engine's pin, cores the process keeps)
SETTINGS = {
    "pinned": (None, 1),
    "pinned flags, 2 cores": ("pin", 2),
    "no flags, 1 core": ("", 1),
    "no flags, 2 cores": ("", 2),
}

CHILD = r"""
import hashlib, json, os, sys, time
flags, cores = json.loads(sys.argv[1])
os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0) | {0, 1})[:cores]))
import memrl
from memrl.engines import pin
if flags is None:
    pin.pin()  # the engine's own (binds one core)
else:
    env = pin.environment("cpu")
    os.environ.update({**env, "XLA_FLAGS": env["XLA_FLAGS"] if flags == "pin" else ""})
    pin.pin = lambda: "cpu"  # the engine's modules call it on import: here, a no-op
import jax, jax.numpy as jnp, numpy as np
from memrl.engines import nets

def h(*xs):
    d = hashlib.sha256()
    for x in jax.tree.leaves(xs):
        d.update(np.ascontiguousarray(jax.device_get(x)).tobytes())
    return d.hexdigest()[:16]

def timed(fn, reps=5):
    out, ts = None, []
    for _ in range(reps):
        t0 = time.perf_counter(); out = fn(); ts.append(time.perf_counter() - t0)
    return out, sorted(ts)[len(ts) // 2] * 1e3

k = jax.random.key(0)
def normal(i, shape):
    return jax.random.normal(jax.random.fold_in(k, i), shape)

def mm(m, kk, n):
    a, b = normal(1, (m, kk)), normal(2, (kk, n))
    f = jax.jit(lambda a, b: a @ b)
    return lambda: h(f(a, b))

def conv_grad():
    w, b, x = normal(3, (16, 4, 3, 3)) * 0.2, jnp.zeros(16), normal(4, (32, 4, 10, 10))
    f = jax.jit(jax.value_and_grad(lambda w: jnp.square(nets.conv3x3(w, b, x)).mean()))
    return lambda: h(f(w))

def mlp_adam():
    import optax
    ws = [normal(5, (17, 256)) * 0.1, normal(6, (256, 256)) * 0.06, normal(7, (256, 1)) * 0.06]
    x, y = normal(8, (256, 17)), normal(9, (256, 1))
    opt = optax.adam(3e-4)
    def loss(ws):
        hdn = jnp.tanh(x @ ws[0]); hdn = jnp.tanh(hdn @ ws[1]); return jnp.square(hdn @ ws[2] - y).mean()
    @jax.jit
    def run(ws):
        st = opt.init(ws)
        for _ in range(20):
            g = jax.grad(loss)(ws); u, st = opt.update(g, st); ws = optax.apply_updates(ws, u)
        return ws
    return lambda: h(run(ws))

def stream_q_steps():
    from memrl.agents.stream_q import StreamQParams
    from memrl.engines import stream_q
    p = StreamQParams()
    params = stream_q.init_params((4, 10, 10), 3, p, 0)
    step = stream_q.make_step(p)
    xs = [np.asarray(normal(10 + i, (4, 10, 10))) for i in range(21)]
    def run():
        w, z = jax.tree.map(jnp.copy, params), jax.tree.map(jnp.zeros_like, params)
        for i in range(20):
            w, z, g = step(w, z, xs[i], np.int32(i % 3), np.float32(0.1 * (i % 4)), xs[i + 1],
                           i % 7 == 6, i % 5 == 4, xs[i + 1])
        return w, z
    return lambda: h(run())

def scan():
    a = normal(11, (512, 64))
    f = jax.jit(lambda a: jax.lax.scan(lambda c, r: (jnp.tanh(c @ a[:64] + r), c.sum()), jnp.zeros(64), a))
    return lambda: h(f(a))

def k_block(m=32, kk=1600, n=128):
    # the inner-dimension block a long product is summed in here: the first chunk size whose
    # chunked sum (chunks added in order) reproduces the whole product bitwise. Eigen, which
    # XLA:CPU hands such products to, sizes it by the CPU's L1 cache (read at run time)
    a, b = normal(13, (m, kk)), normal(14, (kk, n))
    f = jax.jit(lambda a, b: a @ b)
    full = np.asarray(f(a, b))
    def chunked(s):
        c = None
        for i in range(0, kk, s):
            p = np.asarray(f(a[:, i:i + s], b[i:i + s]))
            c = p if c is None else (c + p).astype(np.float32)
        return c
    found = next(s for s in range(8, kk + 1, 8) if np.array_equal(chunked(s), full))
    return lambda: str(found)

def chunked(m=32, kk=1600, n=128):
    a, b = normal(13, (m, kk)), normal(14, (kk, n))
    f = jax.jit(nets.chunked_matmul)
    return lambda: h(f(a, b))

def dqn_updates():
    # the replay DQN's compiled update (its long products chunked), 20 updates on one batch
    from memrl.engines import minatar_dqn
    from memrl.families import load_family
    hp = load_family("experience_replay", "default").stream.dqn
    p = minatar_dqn.init_params((4, 10, 10), 3, hp, 0)
    z = jax.tree.map(jnp.zeros_like, p)
    s = (np.asarray(normal(15, (32, 4, 10, 10))) > 1.0).astype(np.uint8)
    s2 = (np.asarray(normal(16, (32, 4, 10, 10))) > 1.0).astype(np.uint8)
    a, r, t = np.arange(32, dtype=np.int32) % 3, (np.arange(32) % 5 == 0).astype(np.float32), np.arange(32) % 7 == 0
    u = jax.jit(minatar_dqn.make_update(hp))
    def run():
        w, v, m = p, z, z
        for _ in range(20):
            w, v, m = u(w, p, v, m, s, a, r, s2, t)
        return w
    return lambda: h(run())

def op(fn, n=1 << 16):
    x = normal(12, (n,))
    f = jax.jit(fn)
    return lambda: h(f(x))

W = {"mm 16x64x256": mm(16, 64, 256), "mm 512x64x256": mm(512, 64, 256),
     "mm 32x1600x128": mm(32, 1600, 128), "dot K block (32x1600x128)": k_block(),
     "chunked_matmul 32x1600x128": chunked(), "replay DQN update x20": dqn_updates(),
     "mm 256x256x256": mm(256, 256, 256), "conv minatar fwd+bwd (im2col)": conv_grad(),
     "mlp adam x20": mlp_adam(), "stream Q step x20": stream_q_steps(), "scan 512": scan(),
     "exp": op(jnp.exp), "log": op(lambda x: jnp.log(jnp.abs(x) + 1e-3)), "tanh": op(jnp.tanh),
     "sigmoid": op(jax.nn.sigmoid), "softmax": op(lambda x: jax.nn.softmax(x.reshape(256, 256), 1)),
     "layer_norm": op(lambda x: nets.layer_norm(x.reshape(256, 256))), "sum 2^16": op(jnp.sum),
     "sum 2^20": op(jnp.sum, 1 << 20)}
res = {}
for name, fn in W.items():
    fp, ms = timed(fn)
    res[name] = [fp, round(ms, 3)]
res["_cores"] = [len(os.sched_getaffinity(0)), 0]
res["_xla_flags"] = [os.environ.get("XLA_FLAGS", ""), 0]
print(json.dumps(res))
"""


def run() -> dict:
    from memrl.isa import cpu_model

    out = {"_cpu": cpu_model()}
    for name, (flags, cores) in SETTINGS.items():
        env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
        p = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps([flags, cores])],
            capture_output=True, text=True, env=env, check=True,
        )  # fmt: skip
        out[name] = json.loads(p.stdout.strip().splitlines()[-1])
    return out


def compare(a: dict, b: dict) -> None:
    print(f"A: {a['_cpu']}\nB: {b['_cpu']}")
    for setting in SETTINGS:
        names = [n for n in a[setting] if not n.startswith("_")]
        same = [n for n in names if a[setting][n][0] == b[setting].get(n, [None])[0]]
        print(f"{setting:24s} {len(same)}/{len(names)} identical"
              + "".join(f"\n    differs: {n}" for n in names if n not in same))  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--compare", nargs=2, metavar="JSON")
    a = ap.parse_args()
    if a.compare:
        compare(*(json.load(open(f)) for f in a.compare))
        return
    res = run()
    print(json.dumps(res, indent=1))
    base = res["pinned"]
    for setting in SETTINGS:
        diff = [n for n in base if not n.startswith("_") and res[setting][n][0] != base[n][0]]
        print(f"{setting:24s} differs from pinned on {len(diff)}: {diff}", file=sys.stderr)


if __name__ == "__main__":
    main()
