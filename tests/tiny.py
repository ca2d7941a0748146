"""The tiny training run the command-line tests share.

A test that needs some short `marl train` (not a particular one) takes these overrides: the
same learner, shapes, budget and evaluation schedule give the same compiled programs, so the
run's persistent XLA cache (conftest.py) compiles them once for every test file, xdist worker
and `marl`/`python -m marl.app` process that uses them.
"""

TINY_IPPO = [
    "env=particle/simple",
    "algo=ippo",
    "seeds=2",
    "budget=2048",
    "algo.num_envs=4",
    "algo.rollout_length=16",
    "protocol.eval_episodes=4",
    "protocol.num_evaluations=8",
    "protocol.absolute_episodes=8",
]


def tiny(**changes: str) -> list[str]:
    """TINY_IPPO with some keys given other values (`tiny(algo="ippo,mappo")`; dotted keys by
    `**{"protocol.num_evaluations": "2"}`): a test that needs the same sizes but its own run."""
    given = dict(o.split("=", 1) for o in TINY_IPPO)
    unknown = set(changes) - set(given)
    assert not unknown, f"not in TINY_IPPO: {sorted(unknown)}"
    return [f"{k}={changes.get(k, v)}" for k, v in given.items()]
