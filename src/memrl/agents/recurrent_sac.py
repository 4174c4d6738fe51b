"""Recurrent SAC for POMDPs (Ni et al. 2022; Yang & Nguyen 2021), readable top to bottom.

- **Inputs.** At step ``t`` every memory encoder reads ``[o_t, a_{t-1}, r_{t-1}]``
  (each embedded by a small linear layer) and a recurrent core
  (:mod:`memrl.memory.cores`: GRU, LSTM or FFM) turns the history into ``h_t``.
- **Separate encoders** (Ni et al.'s recommendation): the actor and the critic
  each own an encoder; the critic's two Q heads share the critic's encoder, as in
  pomdp-baselines. ``shared_encoder=True`` is their ablation as pomdp-baselines runs it
  (``policy_rnn_shared.py``): one encoder, and one Adam over it, both Q heads and the
  actor on ``0.5 (L_Q1 + L_Q2) + L_pi``; the TD target reads the online encoder's
  (detached) features, and only the Q heads have targets (:meth:`RecurrentSAC.update_shared`).
- **Training** runs the encoders in sequence mode over replayed windows
  (:class:`~memrl.memory.sequence.SequenceReplayBuffer`) from a zero state, with a
  masked loss: the critic regresses ``r_t + gamma (1 - d_t) (min Q'(h'_{t+1}, a') - alpha log pi(a'|h_{t+1}))``,
  the actor minimises ``alpha log pi(a|h_t) - min Q(h_t, a)``, and the entropy
  temperature ``alpha`` is tuned toward ``-|A|``; targets move by Polyak averaging.
- **Acting** runs the actor's encoder in step mode, one env step at a time.
"""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import torch as th
from torch import nn
from torch.nn import functional as F

from memrl.agents import recurrent_loop
from memrl.agents.nets import adam, mlp, optimise, polyak

LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0


class Actor(nn.Module):
    def __init__(self, hidden: int, act_dim: int, head: list[int]) -> None:
        super().__init__()
        self.net = mlp(hidden, 2 * act_dim, head)

    def forward(self, h: th.Tensor, deterministic: bool = False) -> tuple[th.Tensor, th.Tensor]:
        """A squashed-Gaussian action in [-1, 1] and its log-probability."""
        mean, log_std = self.net(h).chunk(2, -1)
        std = log_std.clamp(LOG_STD_MIN, LOG_STD_MAX).exp()
        u = mean if deterministic else mean + std * th.randn_like(mean)
        a = th.tanh(u)
        logp = (-0.5 * ((u - mean) / std) ** 2 - std.log() - 0.5 * np.log(2 * np.pi)).sum(-1)
        logp = logp - (2 * (np.log(2) - u - F.softplus(-2 * u))).sum(-1)  # tanh correction
        return a, logp


class RecurrentSAC:
    """Networks, optimisers and the update rule (the environment loop is :func:`train`)."""

    @classmethod
    def for_env(
        cls, env: gym.Env, p: recurrent_loop.RecurrentParams, seed: int, device: str
    ) -> RecurrentSAC:
        """The agent for a continuous-action ``env`` (trained by
        :func:`~memrl.agents.recurrent_loop.train`)."""
        obs_dim = int(np.prod(env.observation_space.shape))
        return cls(obs_dim, int(np.prod(env.action_space.shape)), p, device)

    def __init__(
        self, obs_dim: int, act_dim: int, p: recurrent_loop.RecurrentParams, device: str = "cpu"
    ) -> None:
        self.p, self.device, self.act_dim = p, device, act_dim
        hid = p.hidden_size
        self.actor_encoder, self.critic_encoder, self.q1, self.q2 = (
            recurrent_loop.encoders_and_critics(obs_dim, act_dim, p, device)
        )
        self.actor = Actor(hid, act_dim, p.head).to(device)
        self.critic = nn.ModuleList([self.critic_encoder, self.q1, self.q2])
        if p.shared_encoder:  # one encoder, one optimiser, targets for the Q heads only
            self.heads = nn.ModuleList([self.q1, self.q2])
            self.heads_target = copy.deepcopy(self.heads).requires_grad_(False)
            self.joint_opt = adam(
                [*self.critic.parameters(), *self.actor.parameters()], p.learning_rate
            )
        else:
            self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
            self.critic_opt = adam(self.critic.parameters(), lr=p.learning_rate)
            self.actor_opt = recurrent_loop.actor_optimiser(self.actor, self.actor_encoder, p)
        self.log_alpha = th.zeros(1, requires_grad=True, device=device)
        self.alpha_opt = adam([self.log_alpha], lr=p.learning_rate)
        self.target_entropy = -float(act_dim)

    @th.no_grad()
    def act(self, h: th.Tensor, explore: bool) -> np.ndarray:
        return self.actor(h, deterministic=not explore)[0][0].cpu().numpy()

    def update(self, batch) -> dict[str, float]:
        """One gradient step of critic, actor and temperature on a batch of windows."""
        if self.p.shared_encoder:
            return self.update_shared(batch)
        p = self.p
        _, q1_t, q2_t = self.critic_target
        f = recurrent_loop.sac_features(self, batch)
        h_q, h_a, mask, n = f.critic, f.actor, f.mask, f.n
        alpha = self.log_alpha.exp().detach()

        # ---- critic
        with th.no_grad():
            a_next, logp_next = self.actor(h_a[:, 1:])
            x_next = th.cat([f.target[:, 1:], a_next], -1)
            q_next = th.min(q1_t(x_next), q2_t(x_next)).squeeze(-1) - alpha * logp_next
            target = f.rew + p.gamma * (1.0 - f.done) * q_next
        x = th.cat([h_q[:, :-1], f.act], -1)
        q1, q2 = self.q1(x).squeeze(-1), self.q2(x).squeeze(-1)
        critic_loss = (((q1 - target) ** 2 + (q2 - target) ** 2) * mask).sum() / n
        optimise(self.critic_opt, critic_loss)

        # ---- actor (critic features detached: the actor trains only its own encoder)
        a_pi, logp = self.actor(h_a[:, :-1])
        x_pi = th.cat([h_q[:, :-1].detach(), a_pi], -1)
        q_pi = th.min(self.q1(x_pi), self.q2(x_pi)).squeeze(-1)
        actor_loss = ((alpha * logp - q_pi) * mask).sum() / n
        optimise(self.actor_opt, actor_loss)

        # ---- temperature
        alpha_loss = (-(self.log_alpha * (logp.detach() + self.target_entropy)) * mask).sum() / n
        optimise(self.alpha_opt, alpha_loss)

        # ---- targets
        polyak(self.critic_target.parameters(), self.critic.parameters(), p.tau)
        return {
            "critic_loss": critic_loss.item(),
            "actor_loss": actor_loss.item(),
            "alpha": alpha.item(),
        }

    def update_shared(self, batch) -> dict[str, float]:
        """The shared-encoder ablation's step (pomdp-baselines ``policy_rnn_shared.py``):
        ``h`` from the one encoder; ``L_Q`` as above with ``y`` from ``h_{t+1}`` (online,
        detached) and the Q heads' targets; ``L_pi`` through the same ``h`` and online Q heads;
        one Adam step on ``0.5 (L_Q1 + L_Q2) + L_pi``, then the temperature and the heads' targets."""
        p = self.p
        full_obs, full_pa, full_pr, act, rew, done, mask = recurrent_loop.history(
            batch, self.device
        )
        n = mask.sum().clamp(min=1.0)
        alpha = self.log_alpha.exp().detach()
        h, _ = self.critic_encoder(full_obs, full_pa, full_pr)
        q1_t, q2_t = self.heads_target

        # ---- critic
        with th.no_grad():
            a_next, logp_next = self.actor(h[:, 1:])
            x_next = th.cat([h[:, 1:], a_next], -1)
            q_next = th.min(q1_t(x_next), q2_t(x_next)).squeeze(-1) - alpha * logp_next
            target = rew + p.gamma * (1.0 - done) * q_next
        x = th.cat([h[:, :-1], act], -1)
        q1, q2 = self.q1(x).squeeze(-1), self.q2(x).squeeze(-1)
        q1_loss = ((q1 - target) ** 2 * mask).sum() / n
        q2_loss = ((q2 - target) ** 2 * mask).sum() / n

        # ---- actor (through the shared encoder and the online Q heads), one joint step
        a_pi, logp = self.actor(h[:, :-1])
        x_pi = th.cat([h[:, :-1], a_pi], -1)
        q_pi = th.min(self.q1(x_pi), self.q2(x_pi)).squeeze(-1)
        actor_loss = ((alpha * logp - q_pi) * mask).sum() / n
        optimise(self.joint_opt, 0.5 * (q1_loss + q2_loss) + actor_loss)

        # ---- temperature
        alpha_loss = (-(self.log_alpha * (logp.detach() + self.target_entropy)) * mask).sum() / n
        optimise(self.alpha_opt, alpha_loss)

        # ---- targets: the Q heads only
        polyak(self.heads_target.parameters(), self.heads.parameters(), p.tau)
        return {
            "critic_loss": (q1_loss + q2_loss).item(),
            "actor_loss": actor_loss.item(),
            "alpha": alpha.item(),
        }
