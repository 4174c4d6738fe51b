"""Accelerated engines: training runs compiled whole (PureJaxRL's ``make_train`` shape).

The torch agents (:mod:`memrl.agents`) dispatch each of a small network's ops from Python;
for streaming RL on MinAtar (one transition, batch 1, every step) that dispatch is the
run's cost. An engine writes the same algorithm, its game and its loop as XLA-compiled code
(JAX on CPU), behind the agents' contract (:mod:`memrl.agents.contract`: ``train(...) -> TrainLog``), so
a job's spec says which engine runs it (:attr:`memrl.jobs.JobSpec.engine`) and the store,
claims, notebooks and report neither know nor care.

- :mod:`memrl.engines.pin`: XLA's kernels, threads and versions pinned before jax loads
  (the engine's share of every engine job's key, shown by ``python -m memrl isa``);
- :mod:`memrl.engines.stream_q`: stream Q(lambda), equal to :mod:`memrl.agents.stream_q`
  step for step, each run one compiled loop over the ported game
  (:mod:`memrl.envs.minatar_jax`);
- :mod:`memrl.engines.dqn1`: DQN with a buffer of 1 and batch 1, equal to its SB3 form
  (:func:`memrl.agents.sb3_dqn.dqn_train`) update for update, the same loop;
- :mod:`memrl.engines.normalisation`: the streaming wrappers' statistics as pure functions.

Nothing here is imported by the package at load time: jax loads only in a process that
runs an engine job, after :func:`memrl.engines.pin.pin`.
"""
