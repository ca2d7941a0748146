"""`marl train OVERRIDES` (`train_command`): the overrides checked, a multi-host run joined where
asked (before anything starts JAX), the config composed and resolved once, then either the plan
printed (`--dry-run`) or the run trained into its folder (`execute.train_run`).

```
train_command(overrides) -> compose / resolve: checked once; the env, the learner and the
                            transfer targets built once (RunConfig)
  -> execute.train_run(run): the run folder claimed, trained into, finished and let go
```
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from omegaconf import OmegaConf

from marl.run.errors import ConfigError, UsageError
from marl.run.processes.runtime import (
    DistributedError,
    finish_distributed,
    join_distributed,
    wants_distributed,
)
from marl.run.processes.supervisor import supervise, supervised
from marl.run.train.compose import compose
from marl.run.train.settings import start_distributed


def train_command(overrides: Sequence[str], dry_run: bool = False) -> int:
    """`marl train OVERRIDES`: compose and check the config, join a multi-host run if asked
    (the work in a child process under `supervisor.supervise`, which ends it in one line when
    JAX does), train every seed and write the run directory; the exit code (130: interrupted)."""
    for item in overrides:
        key, _, value = item.partition("=")
        if key == "vmap" or (key.lstrip("+") in ("env", "algo", "protocol") and "," in value):
            raise UsageError(f"{item}: one run takes one value; sweep values with marl sweep")
    try:
        if wants_distributed(overrides) and not dry_run and not supervised():
            return supervise([sys.executable, "-m", "marl.cli", "train", *overrides])
        if wants_distributed(overrides) and not dry_run:
            where = os.environ.get("JAX_COORDINATOR_ADDRESS", "the cluster's coordinator")
            print(f"distributed=true: joining the multi-host run at {where}", flush=True)
            join_distributed()  # before anything starts a JAX backend (resolving does)
    except DistributedError as e:
        raise UsageError(str(e)) from None
    # imported once a multi-host run is joined: importing them starts a JAX backend
    from marl.run.train.execute import plan, train_run
    from marl.run.train.resolve import resolve

    try:
        cfg = compose(overrides)
        start_distributed(cfg, join=not dry_run)  # a dry run checks, joins nothing
        run = resolve(cfg, command=overrides)
    except ConfigError as e:
        raise UsageError(str(e)) from None
    if dry_run:  # the resolved config and the plan; nothing is claimed or trained
        print(OmegaConf.to_yaml(OmegaConf.create(run.config)), end="")
        print(plan(run))
        return 0
    done = train_run(run)
    finish_distributed()  # a multi-host run's peers stop watching this process
    return 0 if done is not None else 130
