"""Run directories: `<out>/<env id>/<algo>/<name or timestamp>/`.

```
config.yaml     the resolved config (`RunConfig.to_dict`), written before training starts
curve.json      every evaluation: step, per-seed mean and per-episode values of each metric,
                and (once the run ends) the training metrics of the segment before it
final.json      the last evaluation per seed, mean and std over seeds of the final return,
                wall time, compile time, steps per second, package versions and device
params.msgpack  final acting parameters of every seed, `flax.serialization.to_bytes`
                (leaves [seeds, ...]; read back with `flax.serialization.msgpack_restore`)
```

Every file is written atomically (a temporary file in the same directory, then `os.replace`),
so a reader never sees half a file, and `curve.json` is rewritten after each evaluation.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import tempfile
from datetime import datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from marl.config import RunConfig
from marl.training import RunResult

STAMP = "%Y%m%d-%H%M%S"
VERSIONED = ("marl", "jax", "jaxlib", "flax", "optax", "numpy", "hydra-core")


def atomic_write(path: Path, data: str | bytes) -> None:
    """Write `data` to `path` through a temporary file and `os.replace`."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_json(path: Path, obj: Any, indent: int | None = 1) -> None:
    """Atomic JSON (NaN/inf written as JSON's non-standard NaN/Infinity)."""
    atomic_write(path, json.dumps(obj, indent=indent) + "\n")


def _claim(parent: Path, name: str | None, now: datetime) -> Path:
    """Create the run directory; a given name must be new, a timestamp gets a -2, -3 suffix."""
    parent.mkdir(parents=True, exist_ok=True)
    if name is not None:
        path = parent / name
        path.mkdir()  # FileExistsError: never mix two runs in one directory
        return path
    stamp = now.strftime(STAMP)
    for k in range(1, 1000):
        path = parent / (stamp if k == 1 else f"{stamp}-{k}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise FileExistsError(f"no free run directory under {parent} for {stamp}")


def versions() -> dict[str, str]:
    """Versions of the packages results depend on, and of Python."""
    out = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def device() -> dict[str, Any]:
    """The default JAX backend: platform, device kind and count."""
    import jax

    devices = jax.devices()
    return {
        "platform": devices[0].platform,
        "kind": devices[0].device_kind,
        "count": len(devices),
        "cpu_count": os.cpu_count(),
    }


def _floats(x: Any) -> Any:
    return np.asarray(x, dtype=np.float64).tolist()


def evaluation_record(step: int, evals: dict[str, np.ndarray]) -> dict[str, Any]:
    """One `curve.json` entry: per metric, `mean` [seeds] and `episodes` [seeds, episodes]."""
    metrics = {}
    for key, value in evals.items():
        value = np.asarray(value)
        metrics[key] = {"mean": _floats(value.mean(axis=-1)), "episodes": _floats(value)}
    return {"step": int(step), "metrics": metrics}


class RunDir:
    """A run directory being filled: config first, the curve as it grows, final files last."""

    def __init__(self, run: RunConfig, now: datetime | None = None):
        self.run = run
        self.created = now or datetime.now()
        self.path = _claim(run.out / run.env_id / run.algo, run.name, self.created)
        self.evaluations: list[dict[str, Any]] = []
        self.write_config()

    def write_config(self) -> None:
        from omegaconf import OmegaConf

        head = "# resolved config of this run"
        if self.run.command:
            head += "; command: marl train " + " ".join(self.run.command)
        text = OmegaConf.to_yaml(OmegaConf.create(self.run.to_dict()))
        atomic_write(self.path / "config.yaml", f"{head}\n{text}")

    def _curve(self) -> dict[str, Any]:
        run = self.run
        return {
            "env": run.env_id,
            "algo": run.algo,
            "seeds": run.settings.seeds,
            "eval_episodes": run.settings.eval_episodes,
            "evaluations": self.evaluations,
        }

    def on_evaluation(self, step: int, evals: dict[str, np.ndarray]) -> None:
        """Append one evaluation and rewrite `curve.json` (pass as `training.run`'s hook)."""
        self.evaluations.append(evaluation_record(step, evals))
        write_json(self.path / "curve.json", self._curve(), indent=None)

    def finish(self, result: RunResult) -> dict[str, Any]:
        """Write the full curve, `final.json` and `params.msgpack`; returns the final record."""
        from flax import serialization

        self.evaluations = [
            evaluation_record(step, evals)
            for step, evals in zip(result.steps, result.evaluations, strict=True)
        ]
        for entry, metrics in zip(self.evaluations[1:], result.train_metrics, strict=True):
            entry["train"] = {k: _floats(v) for k, v in metrics.items()}
        write_json(self.path / "curve.json", self._curve(), indent=None)
        final = final_record(self.run, result)
        final["created"] = self.created.isoformat(timespec="seconds")
        write_json(self.path / "final.json", final)
        if result.params is not None:
            atomic_write(self.path / "params.msgpack", serialization.to_bytes(result.params))
        return final


def final_record(run: RunConfig, result: RunResult) -> dict[str, Any]:
    """Scores of the last evaluation per seed and over seeds, timings, versions, device.

    `return` is the team return (summed over agents and steps), averaged over the evaluation
    episodes of each seed; `std` is the sample standard deviation over seeds (ddof=1).
    """
    last = result.evaluations[-1]
    per_seed = {k: np.asarray(v).mean(axis=-1) for k, v in last.items()}
    returns = per_seed["return"]
    ddof = 1 if len(returns) > 1 else 0
    return {
        "env": run.env_id,
        "algo": run.algo,
        "seeds": run.settings.seeds,
        "budget": run.settings.budget,
        "env_steps": int(result.steps[-1]),
        "return_mean": float(np.mean(returns)),
        "return_std": float(np.std(returns, ddof=ddof)),
        "final": {k: _floats(v) for k, v in per_seed.items()},
        "wall_time": float(result.wall_time),
        "compile_time": float(result.compile_time),
        "steps_per_second": float(result.steps_per_second),
        "versions": versions(),
        "device": device(),
    }
