"""A launch's options (`--launcher local|slurm` and `--launcher-config`): where jobs run and
with what resources, each value checked before it reaches submitit or a job script."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from marl.run.errors import UsageError

LAUNCHERS = ("local", "slurm")


@dataclass(frozen=True)
class LaunchOptions:
    """Where and how jobs run. Flags override the yaml file's keys (`--launcher-config`)."""

    launcher: str
    folder: Path  # submitit's logs and pickles, and jobs.json
    jobs: int | None = None  # at most this many at once (local: processes; Slurm: array cap)
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    constraint: str | None = None
    gpus_per_job: int = 0
    cpus_per_job: int | None = None
    mem_gb: float | None = None
    time_limit_min: int | None = None  # every job's limit (default: from the measured cost)
    setup: tuple[str, ...] = ()  # shell lines run before each job (module load, venv)
    additional: dict[str, Any] = field(default_factory=dict)  # more #SBATCH keys

    @classmethod
    def keys(cls) -> list[str]:
        return [f.name for f in fields(cls) if f.name not in ("launcher", "folder")]


def options(launcher: str, folder: Path, config: str | None = None, **flags: Any) -> LaunchOptions:
    """The launch options: the yaml file `config` (keys of `LaunchOptions`), then the flags
    that are not None. Unknown keys and wrong values fail in one line."""
    if launcher not in LAUNCHERS:
        raise UsageError(f"--launcher {launcher!r} unknown; valid: {', '.join(LAUNCHERS)}")
    values: dict[str, Any] = {}
    if config:
        path = Path(config)
        if not path.is_file():
            raise UsageError(f"--launcher-config {config}: no such file")
        from marl.results.files import read_yaml

        try:
            data = read_yaml(path) or {}
        except (OSError, ValueError) as e:
            raise UsageError(f"--launcher-config {config}: {e}") from None
        if not isinstance(data, dict):
            raise UsageError(f"--launcher-config {config}: expected a mapping of options")
        unknown = sorted(set(data) - set(LaunchOptions.keys()))
        if unknown:
            raise UsageError(
                f"--launcher-config {config}: unknown key(s) {', '.join(unknown)}; valid: "
                f"{', '.join(LaunchOptions.keys())}"
            )
        values.update(data)
    values.update({k: v for k, v in flags.items() if v is not None})
    _check_values(values)
    values["setup"] = tuple(values.get("setup") or ())
    return LaunchOptions(launcher=launcher, folder=Path(folder), **values)


def _one_line(v: Any) -> bool:
    """A scalar that is safe on one line of a job script (no newline or other control
    character can start a line of its own there)."""
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        return False
    return not any(ord(c) < 32 or ord(c) == 127 for c in str(v))


def _check_values(values: dict[str, Any]) -> None:
    """Each launcher option of the right kind (nothing that adds a line to a job script)."""

    def whole(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0

    def lines(v: Any) -> bool:
        return isinstance(v, (list, tuple)) and all(isinstance(x, str) and _one_line(x) for x in v)

    def sbatch(v: Any) -> bool:
        keys = all(isinstance(k, str) and k.replace("_", "").replace("-", "").isalnum() for k in v)
        return keys and all(_one_line(x) for x in v.values())

    name = (lambda v: isinstance(v, str) and bool(v) and _one_line(v), "a name on one line")
    checks = {k: (whole, "a whole number >= 0") for k in ("jobs", "gpus_per_job")}
    checks |= {k: (whole, "a whole number >= 0") for k in ("cpus_per_job", "time_limit_min")}
    checks |= {k: name for k in ("partition", "account", "qos", "constraint")}
    checks["mem_gb"] = (
        lambda v: whole(v) and v > 0 or type(v) is float and 0 < v < 1e6,
        "a number of GB > 0",
    )
    checks["setup"] = (lines, "a list of shell lines (one string each)")
    checks["additional"] = (
        lambda v: isinstance(v, dict) and sbatch(v),
        "a mapping of #SBATCH keys to values on one line",
    )
    for key, (ok, expected) in checks.items():
        v = values.get(key)
        if v is not None and not ok(v):
            raise UsageError(f"launcher option {key}={v!r}: expected {expected}")
    if values.get("jobs") == 0:
        raise UsageError("--jobs 0: give at least 1")
