"""Recurrent TD3 for POMDPs (Yang & Nguyen 2021; Ni et al. 2022), readable top to bottom.

The same history encoders as recurrent SAC (:class:`~memrl.memory.history.HistoryEncoder`
on ``[o_t, a_{t-1}, r_{t-1}]``; separate actor and critic encoders unless
``shared_encoder``), with TD3's rules (Fujimoto et al. 2018):

- a deterministic actor ``a = tanh(mu(h_t))``, explored with Gaussian noise ``expl_noise``;
- twin critics regress ``r_t + gamma (1 - d_t) min Q'(h'_{t+1}, a')`` with target
  policy smoothing ``a' = clip(mu'(h'_{t+1}) + clip(N(0, target_noise), +-noise_clip))``;
- the actor (maximising ``Q1``) and all targets move every ``policy_delay`` critic updates.

Losses are masked means over the replayed windows. ``shared_encoder=True`` is Ni et al.'s
ablation as pomdp-baselines runs it (``policy_rnn_shared.py``): one encoder and one Adam over
it, both Q heads and the actor on ``0.5 (L_Q1 + L_Q2) + L_pi`` every step (the actor
maximising ``min(Q1, Q2)``), the TD target from the online encoder's detached features with
the Q heads' and the actor head's targets (:meth:`RecurrentTD3.update_shared`).
"""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import torch as th
from torch import nn

from memrl.agents import recurrent_loop
from memrl.agents.nets import adam, mlp, optimise, polyak


class RecurrentTD3:
    """Networks, optimisers and the update rule (the environment loop is shared)."""

    @classmethod
    def for_env(
        cls, env: gym.Env, p: recurrent_loop.RecurrentParams, seed: int, device: str
    ) -> RecurrentTD3:
        """The agent for a continuous-action ``env``, its exploration noise seeded with
        ``seed`` (trained by :func:`~memrl.agents.recurrent_loop.train`)."""
        obs_dim = int(np.prod(env.observation_space.shape))
        agent = cls(obs_dim, int(np.prod(env.action_space.shape)), p, device)
        agent.noise.manual_seed(seed)
        return agent

    def __init__(
        self, obs_dim: int, act_dim: int, p: recurrent_loop.RecurrentParams, device: str = "cpu"
    ) -> None:
        self.p, self.device, self.act_dim = p, device, act_dim
        hid = p.hidden_size
        self.actor_encoder, self.critic_encoder, self.q1, self.q2 = (
            recurrent_loop.encoders_and_critics(obs_dim, act_dim, p, device)
        )
        self.mu = mlp(hid, act_dim, p.head).to(device)
        self.critic = nn.ModuleList([self.critic_encoder, self.q1, self.q2])
        self.policy = nn.ModuleList([self.actor_encoder, self.mu])
        if p.shared_encoder:  # one encoder, one optimiser, targets for the heads only
            self.heads = nn.ModuleList([self.q1, self.q2, self.mu])
            self.heads_target = copy.deepcopy(self.heads).requires_grad_(False)
            self.joint_opt = adam(
                [*self.critic.parameters(), *self.mu.parameters()], p.learning_rate
            )
        else:
            self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
            self.policy_target = copy.deepcopy(self.policy).requires_grad_(False)
            self.critic_opt = adam(self.critic.parameters(), lr=p.learning_rate)
            self.actor_opt = recurrent_loop.actor_optimiser(self.mu, self.actor_encoder, p)
        self.updates = 0
        # exploration and smoothing noise: a stream of its own, seeded from the run's seed
        self.noise = th.Generator().manual_seed(th.initial_seed() + 1)

    @th.no_grad()
    def act(self, h: th.Tensor, explore: bool) -> np.ndarray:
        a = th.tanh(self.mu(h))[0]
        if explore:
            a = (a + self.p.expl_noise * th.randn(a.shape, generator=self.noise)).clamp(-1.0, 1.0)
        return a.cpu().numpy()

    def update(self, batch) -> dict[str, float]:
        """One critic step; every ``policy_delay`` steps also an actor step and target updates."""
        if self.p.shared_encoder:
            return self.update_shared(batch)
        p = self.p
        full_obs, full_pa, full_pr, act, rew, done, mask = recurrent_loop.history(
            batch, self.device
        )
        n = mask.sum().clamp(min=1.0)

        # ---- critic
        with th.no_grad():
            enc_pt, mu_t = self.policy_target
            a_next = th.tanh(mu_t(enc_pt(full_obs, full_pa, full_pr)[0][:, 1:]))
            smooth = (p.target_noise * th.randn(a_next.shape, generator=self.noise)).clamp(
                -p.noise_clip, p.noise_clip
            )
            a_next = (a_next + smooth).clamp(-1.0, 1.0)
            enc_qt, q1_t, q2_t = self.critic_target
            x_next = th.cat([enc_qt(full_obs, full_pa, full_pr)[0][:, 1:], a_next], -1)
            target = rew + p.gamma * (1.0 - done) * th.min(q1_t(x_next), q2_t(x_next)).squeeze(-1)
        h_q, _ = self.critic_encoder(full_obs, full_pa, full_pr)
        x = th.cat([h_q[:, :-1], act], -1)
        q1, q2 = self.q1(x).squeeze(-1), self.q2(x).squeeze(-1)
        critic_loss = (((q1 - target) ** 2 + (q2 - target) ** 2) * mask).sum() / n
        optimise(self.critic_opt, critic_loss)
        self.updates += 1
        out = {"critic_loss": critic_loss.item()}
        if self.updates % p.policy_delay:
            return out

        # ---- actor (critic features detached: the actor trains only its own encoder)
        h_pi = self.actor_encoder(full_obs, full_pa, full_pr)[0][:, :-1]
        if p.shared_encoder:
            h_pi = h_pi.detach()
        x_pi = th.cat([h_q[:, :-1].detach(), th.tanh(self.mu(h_pi))], -1)
        actor_loss = -(self.q1(x_pi).squeeze(-1) * mask).sum() / n
        optimise(self.actor_opt, actor_loss)

        # ---- targets
        polyak(self.critic_target.parameters(), self.critic.parameters(), p.tau)
        polyak(self.policy_target.parameters(), self.policy.parameters(), p.tau)
        out["actor_loss"] = actor_loss.item()
        return out

    def update_shared(self, batch) -> dict[str, float]:
        """The shared-encoder ablation's step (pomdp-baselines ``policy_rnn_shared.py``): ``h``
        from the one encoder; the target ``y`` from ``h_{t+1}`` (online, detached), the actor
        head's target with smoothing noise and the Q heads' targets; ``L_pi = -min(Q1, Q2)``
        through the same ``h``; one Adam step on ``0.5 (L_Q1 + L_Q2) + L_pi``, then the heads'
        targets."""
        p = self.p
        full_obs, full_pa, full_pr, act, rew, done, mask = recurrent_loop.history(
            batch, self.device
        )
        n = mask.sum().clamp(min=1.0)
        h, _ = self.critic_encoder(full_obs, full_pa, full_pr)
        q1_t, q2_t, mu_t = self.heads_target

        # ---- critic
        with th.no_grad():
            a_next = th.tanh(mu_t(h[:, 1:]))
            smooth = (p.target_noise * th.randn(a_next.shape, generator=self.noise)).clamp(
                -p.noise_clip, p.noise_clip
            )
            x_next = th.cat([h[:, 1:], (a_next + smooth).clamp(-1.0, 1.0)], -1)
            target = rew + p.gamma * (1.0 - done) * th.min(q1_t(x_next), q2_t(x_next)).squeeze(-1)
        x = th.cat([h[:, :-1], act], -1)
        q1_loss = ((self.q1(x).squeeze(-1) - target) ** 2 * mask).sum() / n
        q2_loss = ((self.q2(x).squeeze(-1) - target) ** 2 * mask).sum() / n

        # ---- actor (through the shared encoder and the online Q heads), one joint step
        x_pi = th.cat([h[:, :-1], th.tanh(self.mu(h[:, :-1]))], -1)
        actor_loss = -(th.min(self.q1(x_pi), self.q2(x_pi)).squeeze(-1) * mask).sum() / n
        optimise(self.joint_opt, 0.5 * (q1_loss + q2_loss) + actor_loss)

        # ---- targets: the heads only
        polyak(self.heads_target.parameters(), self.heads.parameters(), p.tau)
        return {"critic_loss": (q1_loss + q2_loss).item(), "actor_loss": actor_loss.item()}
