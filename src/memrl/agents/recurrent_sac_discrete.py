"""Recurrent SAC-discrete for POMDPs with discrete actions (Christodoulou 2019; Ni et al. 2022).

The same history encoders and replay as :mod:`memrl.agents.recurrent_sac`
(``[o_t, a_{t-1}, r_{t-1}]`` with the previous action one-hot; separate actor and
critic encoders unless ``shared_encoder``), with SAC's discrete-action rules, as
pomdp-baselines uses them on CartPole-V and the T-Maze:

- the actor outputs a categorical ``pi(.|h_t)``; twin critics output ``Q(h_t, .)``
  for every action;
- the critic regresses ``r_t + gamma (1 - d_t) sum_a' pi(a'|h_{t+1}) (min Q'(h'_{t+1}, a') - alpha log pi(a'|h_{t+1}))``
  — an exact expectation over actions, no sampling;
- the actor minimises ``sum_a pi(a|h_t) (alpha log pi(a|h_t) - min Q(h_t, a))``;
- the temperature is tuned toward an entropy of ``target_entropy_ratio * log |A|``, or held
  at ``alpha`` when set (Ni et al.'s T-Maze runs: 0.1, ``update_temperature=False``).

Losses are masked means over the replayed windows; targets move by Polyak averaging.
"""

from __future__ import annotations

import copy
import math

import gymnasium as gym
import numpy as np
import torch as th
from torch import nn
from torch.nn import functional as F

from memrl.agents import recurrent_loop
from memrl.agents.nets import adam, mlp, optimise, polyak


class RecurrentSACDiscrete:
    """Networks, optimisers and the update rule (the environment loop is shared)."""

    @classmethod
    def for_env(
        cls, env: gym.Env, p: recurrent_loop.RecurrentParams, seed: int, device: str
    ) -> RecurrentSACDiscrete:
        """The agent for a discrete-action ``env`` (trained by
        :func:`~memrl.agents.recurrent_loop.train`)."""
        if not isinstance(env.action_space, gym.spaces.Discrete):
            raise TypeError(f"SAC-discrete needs a Discrete action space, not {env.action_space}")
        obs_dim = int(np.prod(env.observation_space.shape))
        return cls(obs_dim, int(env.action_space.n), p, device)

    def __init__(
        self, obs_dim: int, n_actions: int, p: recurrent_loop.RecurrentParams, device: str = "cpu"
    ) -> None:
        self.p, self.device, self.n_actions = p, device, n_actions
        self.actor_encoder, self.critic_encoder, self.q1, self.q2 = (
            recurrent_loop.encoders_and_critics(obs_dim, n_actions, p, device, discrete=True)
        )
        self.actor = mlp(p.hidden_size, n_actions, p.head).to(device)
        self.critic = nn.ModuleList([self.critic_encoder, self.q1, self.q2])
        self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
        self.critic_opt = adam(self.critic.parameters(), lr=p.learning_rate)
        self.actor_opt = recurrent_loop.actor_optimiser(self.actor, self.actor_encoder, p)
        start = math.log(p.alpha) if p.alpha is not None else 0.0
        self.log_alpha = th.full((1,), start, requires_grad=p.alpha is None, device=device)
        self.alpha_opt = adam([self.log_alpha], lr=p.learning_rate)
        self.target_entropy = p.target_entropy_ratio * math.log(n_actions)
        self.eye = th.eye(n_actions, device=device)

    def policy(self, h: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """Action probabilities and their logs."""
        logits = self.actor(h)
        return F.softmax(logits, -1), F.log_softmax(logits, -1)

    @th.no_grad()
    def act(self, h: th.Tensor, explore: bool) -> np.ndarray:
        """A one-hot action: sampled from ``pi`` when exploring, else its mode."""
        probs, _ = self.policy(h)
        a = th.multinomial(probs, 1)[0, 0] if explore else probs[0].argmax()
        return self.eye[a].cpu().numpy()

    def update(self, batch) -> dict[str, float]:
        """One gradient step of critic, actor and temperature on a batch of windows;
        expectations over the next action are exact sums over ``pi(.|h_{t+1})``."""
        p, alpha = self.p, self.log_alpha.exp().detach()
        f = recurrent_loop.sac_features(self, batch)
        h_q, h_a, mask, n = f.critic, f.actor, f.mask, f.n

        # ---- critic
        with th.no_grad():
            _, q1_t, q2_t = self.critic_target
            probs_next, logp_next = self.policy(h_a[:, 1:])
            h_t = f.target[:, 1:]
            q_next = th.min(q1_t(h_t), q2_t(h_t)) - alpha * logp_next
            target = f.rew + p.gamma * (1.0 - f.done) * (probs_next * q_next).sum(-1)
        q1 = (self.q1(h_q[:, :-1]) * f.act).sum(-1)
        q2 = (self.q2(h_q[:, :-1]) * f.act).sum(-1)
        critic_loss = (((q1 - target) ** 2 + (q2 - target) ** 2) * mask).sum() / n
        optimise(self.critic_opt, critic_loss)

        # ---- actor (critic features detached: the actor trains only its own encoder)
        probs, logp = self.policy(h_a[:, :-1])
        with th.no_grad():
            hq = h_q[:, :-1].detach()
            q_min = th.min(self.q1(hq), self.q2(hq))
        actor_loss = ((probs * (alpha * logp - q_min)).sum(-1) * mask).sum() / n
        optimise(self.actor_opt, actor_loss)

        # ---- temperature: raise alpha when the policy's entropy falls below the target
        if self.p.alpha is None:  # else held where it was set
            entropy = -(probs.detach() * logp.detach()).sum(-1)
            alpha_loss = (self.log_alpha * (entropy - self.target_entropy) * mask).sum() / n
            optimise(self.alpha_opt, alpha_loss)

        # ---- targets
        polyak(self.critic_target.parameters(), self.critic.parameters(), p.tau)
        return {
            "critic_loss": critic_loss.item(),
            "actor_loss": actor_loss.item(),
            "alpha": alpha.item(),
        }
