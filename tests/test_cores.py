import pytest
import torch as th

from memrl.memory.cores import FFMCore, diagonal_scan, hippo_diagonal, make_core


def _step_through(core, x, state):
    ys = []
    for t in range(x.shape[1]):
        y, state = core.step(x[:, t], state)
        ys.append(y)
    return th.stack(ys, 1), state


@pytest.mark.parametrize("kind", ["gru", "lstm", "ffm", "window", "s5"])
def test_sequence_mode_equals_step_mode(kind):
    th.manual_seed(0)
    core = make_core(kind, 5, 16)
    x = th.randn(3, 150, 5)  # 150 > FFM's chunk of 64: the carry across chunks is exercised
    y_seq, s_seq = core(x, core.initial_state(3))
    y_step, s_step = _step_through(core, x, core.initial_state(3))
    th.testing.assert_close(y_seq, y_step, rtol=1e-4, atol=1e-4)
    # and resuming from a carried state continues the same trajectory
    y_a, s_a = core(x[:, :70], core.initial_state(3))
    y_b, _ = core(x[:, 70:], s_a)
    th.testing.assert_close(th.cat([y_a, y_b], 1), y_seq, rtol=1e-4, atol=1e-4)


def test_ffm_gradients_flow_to_decay_and_frequency():
    th.manual_seed(0)
    core = FFMCore(4, 8, memory_size=4, context_size=2)
    y, _ = core(th.randn(2, 40, 4), core.initial_state(2))
    y.pow(2).mean().backward()
    for p in (core.a, core.freq, core.pre.weight, core.mix.weight):
        assert p.grad is not None and th.isfinite(p.grad).all() and p.grad.abs().sum() > 0
    assert (core.a.grad != 0).all()  # no trace starts clamped at its bound


def test_ffm_decays_start_as_the_reference_spaces_them():
    core = FFMCore(4, 8, memory_size=5, context_size=2, max_period=1024)
    assert core.limit == pytest.approx(0.6832, abs=1e-4)
    a = core.a.detach()
    assert a[0] == pytest.approx(-0.6732, abs=1e-4) and a[-1] == pytest.approx(-0.0045, abs=1e-4)
    assert th.allclose(a.diff(), a.diff()[0].expand(4))  # evenly spaced


def test_s5_draws_c_with_the_reference_fan_in():
    from memrl.memory.cores import S5Layer

    th.manual_seed(0)
    width, state = 64, 32  # C0: (H, 2P, 2), fan-in 2P * H; C = C0 V keeps the scale
    c = th.cat([S5Layer(width, state).c.detach().flatten() for _ in range(8)])
    assert c.std().item() == pytest.approx(1 / (state * width) ** 0.5, rel=0.1)


def test_ffm_traces_decay_and_stay_finite_over_long_sequences():
    th.manual_seed(0)
    core = FFMCore(3, 8)
    with th.no_grad():
        core.pre.bias.zero_()  # zero input -> zero write: only the decay acts
    x = th.zeros(1, 3000, 3)
    x[0, 0] = 5.0  # one event, then silence
    _, s = core(x, core.initial_state(1))
    assert th.isfinite(s).all()
    first = core(x[:, :1], core.initial_state(1))[1]
    assert s.pow(2).sum() < first.pow(2).sum()  # forgetting


def test_unknown_core():
    with pytest.raises(ValueError, match="unknown memory core"):
        make_core("transformer-xl", 3, 4)


def test_window_core_sees_exactly_its_context():
    th.manual_seed(0)
    core = make_core("window", 3, 8, context=4)
    x = th.randn(2, 12, 3)
    y, _ = core(x, core.initial_state(2))
    x2 = x.clone()
    x2[:, 5] += 10.0  # changes outputs at t = 5..8 only (t - 5 < K)
    y2, _ = core(x2, core.initial_state(2))
    differs = (y - y2).abs().sum((0, 2)) > 0
    assert differs.tolist() == [t in range(5, 9) for t in range(12)]


def test_window_core_rejects_bad_context():
    with pytest.raises(ValueError, match="context"):
        make_core("window", 3, 8, context=0)


@pytest.mark.parametrize("resets", [False, True])
@pytest.mark.parametrize("T", [1, 16, 37, 150])
def test_diagonal_scan_matches_the_recurrence(T, resets):
    """Both of its paths (chunks of 16 without resets, a parallel scan with them)."""
    th.manual_seed(T)
    log = th.complex(-th.rand(3), th.randn(3))  # |lambda| < 1
    b = th.randn(2, T, 3, dtype=th.complex64)
    keep = (th.rand(2, T, 1) > 0.1).float() if resets else None
    x, xs = th.zeros(2, 3, dtype=th.complex64), []
    for t in range(T):
        x = th.exp(log) * (1 if keep is None else keep[:, t]) * x + b[:, t]
        xs.append(x)
    x_re, x_im = diagonal_scan(log.real, log.imag, b.real, b.imag, keep)
    th.testing.assert_close(th.complex(x_re, x_im), th.stack(xs, 1), rtol=1e-5, atol=1e-5)


def test_s5_resets_inside_the_scan_start_a_fresh_episode():
    """popjaxrl's modification of S5: a reset flag in the scan = a new episode from state 0,
    with everything before it unchanged."""
    th.manual_seed(0)
    core = make_core("s5", 5, 16, layers=2)
    x = th.randn(3, 90, 5)
    resets = th.zeros(3, 90)
    resets[0, 40] = resets[2, 7] = 1
    y, _ = core(x, core.initial_state(3), resets)
    y_plain, _ = core(x, core.initial_state(3))
    th.testing.assert_close(y[1], y_plain[1])  # no reset in row 1
    th.testing.assert_close(y[0, :40], y_plain[0, :40])
    th.testing.assert_close(y[0, 40:], core(x[:1, 40:], core.initial_state(1))[0][0])
    th.testing.assert_close(y[2, 7:], core(x[2:, 7:], core.initial_state(1))[0][0])
    # step mode takes the same flag
    state, ys = core.initial_state(3), []
    for t in range(90):
        out, state = core.step(x[:, t], state, resets[:, t])
        ys.append(out)
    th.testing.assert_close(th.stack(ys, 1), y, rtol=1e-4, atol=1e-4)


def test_s5_starts_from_hippo_n_and_stays_stable():
    lam, v = hippo_diagonal(8)
    th.testing.assert_close(lam.real, th.full((8,), -0.5))  # the normal part's eigenvalues
    assert th.allclose(lam.imag, -lam.imag.flip(0), atol=1e-4)  # in conjugate pairs
    th.testing.assert_close(v.conj().T @ v, th.eye(8, dtype=th.complex64), atol=1e-5, rtol=0)
    core = make_core("s5", 4, 8)
    log_bar, _ = core.layers[0].discrete()
    assert (log_bar.real < 0).all()  # |Lambda_bar| < 1: every mode decays
    y, _ = core(th.randn(2, 2000, 4), core.initial_state(2))
    assert th.isfinite(y).all()


def test_a_new_core_is_one_table_entry(monkeypatch, params_with):
    """Registered in ``CORES`` alone, a core is a method's core, a card model and RO-11's arm,
    and the family's grid runs it: no other file lists the cores."""
    from memrl.families import load_family
    from memrl.families.recurrent_off_policy.jobs import grid
    from memrl.families.recurrent_off_policy.params import parse_method
    from memrl.memory.cores import CORES, CoreEntry, GRUCore

    class ToyCore(GRUCore):
        pass

    monkeypatch.setitem(CORES, "toy", CoreEntry(ToyCore, "Toy", "toy core", "truncation"))

    def mutate(d):
        d["envs"][0]["methods"].append("RSAC-Toy")
        d["card"]["models"].append("toy")
        d["truncation"]["cores"].append("toy")

    cfg = load_family(
        "recurrent_off_policy", "default", params_with(mutate, "recurrent_off_policy")
    )
    labels = {s.label for s in grid(cfg)}
    assert parse_method("RSAC-Toy") == ("RSAC", "toy", False)
    assert any(x.startswith("RSAC-Toy · ") for x in labels)
    assert "card toy · seed 0" in labels
    assert "TOY truncated, 20 epochs · seed 0" in labels and "TOY full BPTT · seed 0" in labels
    assert isinstance(make_core("toy", 3, 8), ToyCore)
