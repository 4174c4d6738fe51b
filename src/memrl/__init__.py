"""memrl: does memory in RL do what the papers say?

Importing the package registers its gymnasium ids (``memrl/Pendulum-V-v1``,
``memrl/PassiveTMaze-v0``, ``popgym/<Task>-v0`` ...), so ``gym.make`` finds them after
``import memrl``; MinAtar's ids are registered by :func:`memrl.envs.registry.make`. It first
pins the instruction set numpy and torch compute with (:mod:`memrl.isa`), for this process
and every process it starts.
"""

from memrl import isa as _isa

_isa.pin()  # before numpy and torch load: every run computes with one kernel set (memrl.isa)

try:
    import gymnasium  # noqa: F401  (a dependency; absent only in a bare checkout)
except ImportError:  # pragma: no cover
    pass
else:
    from memrl.envs.pomdp import register as _register_envs

    _register_envs()
