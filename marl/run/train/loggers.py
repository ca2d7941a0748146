"""Optional experiment loggers fed after every evaluation (`logger=wandb` or `tensorboard`).

Every run already writes `metrics.jsonl` (`marl.run.folder`); these mirror its scalars (the means
over seeds of `eval/<metric>` and `train/<metric>`) into an external tool. Neither package is
a dependency: `pip install wandb` (the `[wandb]` extra) or `pip install tensorboardX`. Weights &
Biases runs offline unless `WANDB_MODE` says otherwise (`wandb sync` uploads later); tests never
go online.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any, Protocol

LOGGERS = {"wandb": "wandb", "tensorboard": "tensorboardX"}  # name -> the module it needs
INSTALL = {"wandb": "pip install wandb", "tensorboard": "pip install tensorboardX"}


class Logger(Protocol):
    def log(self, step: int, scalars: dict[str, float]) -> None: ...

    def close(self) -> None: ...


def check_logger(name: str | None) -> str | None:
    """`name` if it is a known logger whose package is installed; else a ValueError naming the
    valid choices or the install command."""
    if name is None:
        return None
    if name not in LOGGERS:
        raise ValueError(f"unknown logger {name!r}; valid: null, {', '.join(LOGGERS)}")
    if importlib.util.find_spec(LOGGERS[name]) is None:
        raise ValueError(f"logger={name} needs the {LOGGERS[name]} package: {INSTALL[name]}")
    return name


class WandbLogger:
    """One W&B run per marl run (offline by default), config = the resolved config; a resumed
    run continues its W&B run (`resume="allow"` with `run_id`, kept in the run directory's
    `wandb_id` by `marl.run.folder.RunDir`; None: a new W&B run)."""

    def __init__(self, run_dir: Path, config: dict[str, Any], name: str, run_id: str | None):
        import wandb

        self._wandb = wandb
        self._run = wandb.init(
            project=os.environ.get("WANDB_PROJECT", "marl"),
            name=name,
            config=config,
            dir=str(run_dir),
            mode=os.environ.get("WANDB_MODE", "offline"),
            id=run_id,
            resume="allow",
        )

    def log(self, step: int, scalars: dict[str, float]) -> None:
        self._run.log(scalars, step=step)

    def close(self) -> None:
        self._run.finish()


class TensorBoardLogger:
    """Event files in `<run dir>/tensorboard/` (tensorboardX)."""

    def __init__(self, run_dir: Path):
        from tensorboardX import SummaryWriter

        self._writer = SummaryWriter(str(run_dir / "tensorboard"))

    def log(self, step: int, scalars: dict[str, float]) -> None:
        for key, value in scalars.items():
            self._writer.add_scalar(key, value, step)
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()


def make_logger(
    name: str | None, run_dir: Path, config: dict[str, Any], run_id: str | None = None
) -> Logger | None:
    """The logger `name` writing for the run in `run_dir` (None: no external logger); `run_id`:
    the W&B run a `wandb` logger logs into."""
    if check_logger(name) is None:
        return None
    if name == "wandb":
        title = f"{config['env']['id']}/{config['algo']['name']}"
        return WandbLogger(run_dir, config, title, run_id)
    return TensorBoardLogger(run_dir)
