"""MinAtar's own DQN (Young & Tian 2019, kenjyoung/MinAtar examples/dqn.py @4241f24) as the
replay baseline of ER-8 and EC-1/EC-4: the resolved parameters carry the reference's
values, SB3 is set up to run them, one SB3 update is the reference's update, and the smoke
jobs are tiny."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch as th

from memrl.agents.sb3_dqn import (
    MinAtarDQNParams,
    minatar_dqn_deviations,
    minatar_dqn_kwargs,
    minatar_dqn_model,
    minatar_epsilon,
)
from memrl.families import load_family

# examples/dqn.py's constants, quoted (line numbers at commit 4241f24)
BATCH_SIZE = 32  # :36
REPLAY_BUFFER_SIZE = 100000  # :37
TARGET_NETWORK_UPDATE_FREQ = 1000  # :38 (policy-network updates, :359)
TRAINING_FREQ = 1  # :39
NUM_FRAMES = 5000000  # :40
FIRST_N_FRAMES = 100000  # :41
REPLAY_START_SIZE = 5000  # :42
END_EPSILON = 0.1  # :43
STEP_SIZE = 0.00025  # :44
SQUARED_GRAD_MOMENTUM = 0.95  # :45
MIN_SQUARED_GRAD = 0.01  # :46
GAMMA = 0.99  # :47
EPSILON = 1.0  # :48
# :282 optim.RMSprop(..., lr=step_size, alpha=SQUARED_GRAD_MOMENTUM, centered=True,
#                    eps=MIN_SQUARED_GRAD); no momentum; :72-83 conv 16x3x3 -> 128 -> Q
REFERENCE = {
    "learning_rate": STEP_SIZE,
    "batch_size": BATCH_SIZE,
    "buffer_size": REPLAY_BUFFER_SIZE,
    "learning_starts": REPLAY_START_SIZE,
    "gamma": GAMMA,
    "train_freq": TRAINING_FREQ,
    "target_update_period": TARGET_NETWORK_UPDATE_FREQ,
    "exploration_initial_eps": EPSILON,
    "exploration_final_eps": END_EPSILON,
    "exploration_steps": FIRST_N_FRAMES,
    "optimizer": {
        "alpha": SQUARED_GRAD_MOMENTUM,
        "eps": MIN_SQUARED_GRAD,
        "centered": True,
        "momentum": 0.0,
    },
    "max_grad_norm": None,  # the reference clips no gradient
    "net_arch": [128],
}
GAME = "MinAtar/Breakout-v1"


def baselines(profile: str) -> dict[str, MinAtarDQNParams]:
    er = load_family("experience_replay", profile).stream
    ec = load_family("episodic_control", profile)
    return {"ER-8": er.dqn, "EC-1/EC-4": ec.dqn_for(GAME)}


@pytest.mark.parametrize("profile", ["default", "paper"])
def test_the_baselines_carry_minatars_values(profile):
    for claim, hp in baselines(profile).items():
        assert hp.model_dump() == REFERENCE, claim


def test_er8_budget_and_smoke_sizes():
    """ER-8's replay DQN runs >= 20% of the paper's 5M steps by default, MinAtar's whole
    budget in the paper profile; the smoke profile changes only the replay start."""
    assert load_family("experience_replay", "default").stream.dqn_timesteps >= NUM_FRAMES // 5
    assert load_family("experience_replay", "paper").stream.dqn_timesteps == NUM_FRAMES
    for hp in baselines("smoke").values():
        changed = {k for k, v in hp.model_dump().items() if v != REFERENCE[k]}
        assert changed == {"learning_starts"}


def test_sb3_is_set_up_as_the_reference():
    hp = MinAtarDQNParams(**REFERENCE)
    kw = minatar_dqn_kwargs(hp, 0)
    assert kw["train_freq"] == (TRAINING_FREQ, "step") and kw["gradient_steps"] == 1
    assert kw["target_update_interval"] == TARGET_NETWORK_UPDATE_FREQ * TRAINING_FREQ
    assert kw["tau"] == 1.0 and kw["max_grad_norm"] == float("inf")
    # the target's period is counted in updates: every 4 steps, it is 4x as many env steps
    slow = hp.model_copy(update={"train_freq": 4})
    assert minatar_dqn_kwargs(slow, 0)["target_update_interval"] == 4 * TARGET_NETWORK_UPDATE_FREQ
    from memrl.envs.registry import make

    model = minatar_dqn_model(make(GAME, 0), hp, 10_000, 0)
    opt = model.policy.optimizer
    assert isinstance(opt, th.optim.RMSprop)
    group = opt.param_groups[0]
    assert (group["lr"], group["alpha"], group["eps"]) == (STEP_SIZE, 0.95, 0.01)
    assert group["centered"] and group["momentum"] == 0
    assert (model.batch_size, model.buffer_size, model.gamma) == (32, 100_000, 0.99)
    assert model.learning_starts == REPLAY_START_SIZE
    layers = [m for m in model.q_net.modules() if isinstance(m, th.nn.Conv2d | th.nn.Linear)]
    conv, hidden, out = layers
    assert (conv.out_channels, conv.kernel_size, conv.stride) == (16, (3, 3), (1, 1))
    assert (hidden.in_features, hidden.out_features) == (16 * 8 * 8, 128)
    assert out.out_features == model.action_space.n


def test_epsilon_is_the_references():
    """dqn.py:164-171: random before the replay start, then linear over FIRST_N_FRAMES
    counted from it, then END_EPSILON; SB3 passes the progress remaining after t steps."""
    hp = MinAtarDQNParams(**REFERENCE)
    total = 1_000_000
    eps = minatar_epsilon(hp, total)

    def reference(t: int) -> float:
        if t - REPLAY_START_SIZE >= FIRST_N_FRAMES:
            return END_EPSILON
        return (END_EPSILON - EPSILON) / FIRST_N_FRAMES * (t - REPLAY_START_SIZE) + EPSILON

    for t in (5000, 5001, 30_000, 55_000, 104_999, 105_000, 600_000, total):
        assert eps(1.0 - float(t) / float(total)) == pytest.approx(reference(t), abs=1e-12), t
    assert eps(1.0 - 55_000 / total) == pytest.approx(0.55)
    assert eps(1.0) == 1.0  # before the replay start (SB3 acts at random there anyway)


def test_one_update_is_the_references():
    """One SB3 update equals the reference's train() (dqn.py:204-245) on the same batch:
    Huber loss on r + gamma * max_a' Q_target(s', a') (0 at a terminal), then one step of
    torch's centred RMSprop with no gradient clipping. The reference's update is written
    out here from its source."""
    from stable_baselines3.common.monitor import Monitor

    from memrl.envs.registry import make
    from memrl.runtime import seed_everything

    seed_everything(0)
    hp = MinAtarDQNParams(**(REFERENCE | {"learning_starts": 300, "buffer_size": 1000}))
    model = minatar_dqn_model(Monitor(make(GAME, 0)), hp, 400, 0)
    model.learn(400)  # 100 updates: RMSprop's state is warm, the target has moved once
    assert model._n_updates == 100
    model.q_net_target.load_state_dict(model.q_net.state_dict())
    with th.no_grad():  # a target network apart from the online one, as after a copy
        for p in model.q_net_target.parameters():
            p.mul_(0.9)
    # the reference's networks and optimiser, as the SB3 model's now
    policy, target = copy.deepcopy(model.q_net), copy.deepcopy(model.q_net_target)
    opt = th.optim.RMSprop(
        policy.parameters(), lr=STEP_SIZE, alpha=0.95, centered=True, eps=MIN_SQUARED_GRAD
    )
    opt.load_state_dict(copy.deepcopy(model.policy.optimizer.state_dict()))  # not shared
    before = [p.detach().clone() for p in model.q_net.parameters()]
    state = np.random.get_state()
    batch = model.replay_buffer.sample(BATCH_SIZE)
    np.random.set_state(state)  # SB3's train() draws the same batch
    model.train(gradient_steps=1, batch_size=BATCH_SIZE)

    q_s_a = policy(batch.observations).gather(1, batch.actions.long())
    live = (batch.dones.flatten() == 0).nonzero().flatten()
    q_next = th.zeros(BATCH_SIZE, 1)
    if len(live):
        q_next[live] = target(batch.next_observations[live]).detach().max(1)[0].unsqueeze(1)
    loss = th.nn.functional.smooth_l1_loss(batch.rewards + GAMMA * q_next, q_s_a)
    opt.zero_grad()
    loss.backward()
    opt.step()
    for ours, ref in zip(model.q_net.parameters(), policy.parameters(), strict=True):
        th.testing.assert_close(ours, ref, rtol=0, atol=1e-8)  # float32 rounding; a step ~5e-5
    moved = max(
        float((p.detach() - b).abs().max())
        for p, b in zip(policy.parameters(), before, strict=True)
    )
    assert moved > 1e-6  # the update changed the weights: the comparison means something


def test_the_deviations_name_each_setting():
    hp = MinAtarDQNParams(**REFERENCE)
    for engine in (True, False):
        text = " ".join(minatar_dqn_deviations(hp, 1_000_000, engine=engine))
        for part in ("every 1 step", "batch 32", "100,000", "5,000", "1,000 updates",
                     "lr 0.00025", "alpha 0.95", "eps 0.01", "centred", "Huber",
                     "no gradient clipping", "1 -> 0.1 over 100,000", "minimal action set"):  # fmt: skip
            assert part in text, part
        assert ("with replacement" in text) is not engine  # SB3's draws, not the engine's


def test_smoke_jobs_are_tiny_and_run():
    """The smoke profile's replay-DQN jobs are small, and one runs end to end through the
    family's job function, the same twice."""
    from memrl.families import get
    from memrl.families.experience_replay.jobs import DQN_REPLAY, stream_job

    for family in ("experience_replay", "episodic_control"):
        cfg = load_family(family, "smoke")
        jobs = [j for j in get(family).grid(cfg) if j.label.startswith("DQN ·")]
        minatar = [j for j in jobs if "MinAtar" in str(j.kwargs.get("env_id"))]
        assert minatar, family
        for j in minatar:
            steps = j.kwargs.get("total_timesteps") or j.kwargs["p"]["total_timesteps"]
            assert steps <= 3000, j.label
    st = load_family("experience_replay", "smoke").stream
    p = {"total_timesteps": 700, "curve_points": 2, "late_fraction": st.late_fraction}
    p["dqn"] = st.dqn.model_dump(mode="json") | {"learning_starts": 600}
    rows = [stream_job(0, GAME, DQN_REPLAY, p) for _ in range(2)]
    assert rows[0]["total_timesteps"] == 700 and rows[0]["method"] == DQN_REPLAY
    assert rows[0]["episode_returns"] == rows[1]["episode_returns"]
