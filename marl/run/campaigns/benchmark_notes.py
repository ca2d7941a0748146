"""The explanations of a benchmark's flagged cells: `notes/<name>.yaml` beside its definition,
read as data (`marl.results.flags.read_notes`)."""

from __future__ import annotations

from pathlib import Path

from marl.run.campaigns.benchmark import DEFINITIONS, BenchmarkError


def notes_path(name: str) -> Path:
    """Where the explanations of a benchmark's flagged cells live: `notes/<name>.yaml` beside
    its definition (`marl/conf/benchmark/notes/v1.yaml`)."""
    path = Path(name) if name.endswith((".yaml", ".yml")) else DEFINITIONS / f"{name}.yaml"
    return path.parent / "notes" / path.name


def notes(name: str) -> dict[str, str]:
    """The explanations of benchmark `name`'s flagged cells (cell id `task/algo` -> paragraph,
    `marl.results.flags.read_notes`: YAML read as data); empty where it has none."""
    from marl.results.flags import read_notes

    path = notes_path(name)
    if not path.is_file():
        return {}
    try:
        return read_notes(path)
    except ValueError as e:
        raise BenchmarkError(str(e)) from None
