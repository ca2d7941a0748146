"""A long run split into parts, joined again: `marl merge`.

A run of N seeds can be trained as parts (`marl train ... seeds=N part=a:b`, or `marl benchmark
run ... --part a:b`), each on its own machine or day: a part trains seeds a..b-1 from the very
keys the whole run gives them (`RunSettings.seed_keys`), and evaluates them on the same
evaluation keys, so its seeds are the whole run's seeds. Reports skip parts
(`marl.results.protocol.load`); once parts cover seeds 0..N-1 exactly, `merge` writes the whole
run's directory from them: the records' per-seed values side by side in seed order (the
transfer targets' episodes too), the summaries recomputed over all seeds, the parameters (where
every part kept them) stacked.

Wall, compile and training time are summed over the parts (the compute the run took), and
steps per second is recomputed from them; `meta.json` lists the parts with their own timings,
devices and creation times.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from marl.results.files import atomic_write, read_bytes, read_json, read_text, stored, write_json
from marl.results.protocol import META, RECORD, has_record
from marl.results.runfolder import BEST_PARAMS, CONFIG, FINAL, METRICS
from marl.results.runfolder import PARAMS as FINAL_PARAMS
from marl.run.errors import UsageError
from marl.run.folder.writer import TRANSFER
from marl.run.saved.compact import train_metrics
from marl.run.train.settings import parse_span

PARAMS = (FINAL_PARAMS, BEST_PARAMS)
PART_FIELDS = ("created", "wall_time", "compile_time", "steps_per_second", "device", "code")
PER_SEED = ("final", "absolute")  # final.json's {metric: [seeds]} entries


def part_name(name: str, first: int, stop: int) -> str:
    """The folder of seeds first..stop-1 of run `name`: `name.part0-2`."""
    return f"{name}.part{first}-{stop}"


def part_of(meta: dict[str, Any]) -> tuple[int, int] | None:
    """(first, stop) of a part's seeds from its meta.json, None for a whole run."""
    text = (meta.get("config") or {}).get("part")
    return parse_span(text) if text else None


def _read(path: Path) -> dict[str, Any]:
    try:
        return read_json(path)  # or its compacted copy (`marl.run.saved.compact`)
    except (OSError, EOFError, ValueError) as e:
        raise UsageError(f"{path}: cannot read: {e}") from None


# where a part was written, and when, say nothing of what it trained: parts made on other
# machines or into other record folders merge (the merged config keeps the first part's)
NOT_TRAINING = ("part", "name", "created", "out")


def _without_part(config: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if k not in NOT_TRAINING}


def check_parts(dirs: list[Path]) -> tuple[list[Path], list[dict[str, Any]], int]:
    """The parts sorted by first seed, their metas, and the whole run's seed count; a set of
    parts that is not one run's seeds 0..N-1, each once, is refused in one line."""
    if not dirs:
        raise UsageError("merge needs the part directories of one run")
    metas = []
    for d in dirs:
        if not (d / META).is_file():
            raise UsageError(f"{d}: not a run directory (no {META})")
        meta = _read(d / META)
        if not meta.get("finished") or not has_record(d):
            raise UsageError(f"{d}: unfinished; finish it first (resume=true)")
        if part_of(meta) is None:
            raise UsageError(f"{d}: a whole run, not a part (its config has no part=)")
        metas.append(meta)
    order = sorted(range(len(dirs)), key=lambda i: part_of(metas[i]))
    dirs, metas = [dirs[i] for i in order], [metas[i] for i in order]
    total = int(metas[0]["config"]["seeds"])
    base = _without_part(metas[0]["config"])
    expected = 0
    for d, meta in zip(dirs, metas, strict=True):
        config = _without_part(meta["config"])
        if config != base:
            keys = sorted(k for k in set(config) | set(base) if config.get(k) != base.get(k))
            raise UsageError(
                f"{d}: trained with another config than {dirs[0]} ({', '.join(keys)} differ)"
            )
        if meta.get("env_version") != metas[0].get("env_version"):
            raise UsageError(
                f"{d}: made on env version {meta.get('env_version')} but {dirs[0]} on "
                f"{metas[0].get('env_version')}: the env's behaviour changed between the parts"
            )
        first, stop = part_of(meta)
        if first != expected:
            gap = f"seeds {expected}..{first - 1} missing" if first > expected else "overlap"
            raise UsageError(f"{d}: part {first}:{stop} does not follow seed {expected - 1}: {gap}")
        expected = stop
    if expected != total:
        raise UsageError(f"the parts cover seeds 0..{expected - 1} of {total}: the rest is missing")
    return dirs, metas, total


def _join_lists(items: list[Any]) -> Any:
    """Per-seed values of the parts side by side: lists concatenate, dicts join key by key."""
    first = items[0]
    if isinstance(first, dict):
        return {k: _join_lists([it[k] for it in items]) for k in first}
    if isinstance(first, list):
        return [v for it in items for v in it]
    return first


def _spread(values: list[float]) -> float:
    return float(np.std(values, ddof=1 if len(values) > 1 else 0))


def _timings(metas: list[dict[str, Any]]) -> dict[str, float]:
    seeds = [int(m["seeds"]) for m in metas]
    steps = int(metas[0]["env_steps"])
    wall = sum(float(m["wall_time"]) for m in metas)
    rates = [max(float(m["steps_per_second"]), 1e-9) for m in metas]
    train_s = sum(n * steps / r for n, r in zip(seeds, rates, strict=True))
    return {
        "wall_time": wall,
        "compile_time": sum(float(m["compile_time"]) for m in metas),
        "steps_per_second": sum(seeds) * steps / max(train_s, 1e-9),
    }


def _record(dirs: list[Path], metas: list[dict[str, Any]]) -> dict[str, Any]:
    """record.json of the whole run: each part's `run_k` renumbered `run_{first + k}`; parts
    whose runs were evaluated at other steps are refused (one run, one evaluation grid)."""
    out: dict[str, Any] = {}
    grid = None
    for d, meta in zip(dirs, metas, strict=True):
        first, _ = part_of(meta)
        for env, tasks in _read(d / RECORD).items():
            for task, algos in tasks.items():
                for algo, runs in algos.items():
                    into = out.setdefault(env, {}).setdefault(task, {}).setdefault(algo, {})
                    for name, data in runs.items():
                        steps = _steps(data)
                        grid = steps if grid is None else grid
                        if steps != grid:
                            raise UsageError(
                                f"{d}: {name} of its record is evaluated at other steps than "
                                f"{dirs[0]}'s runs ({_show(steps)} against {_show(grid)})"
                            )
                        into[f"run_{first + int(name.rsplit('_', 1)[1])}"] = data
    return out


def _steps(run: Any) -> list[Any]:
    """A record's run: the env steps of its evaluations, in order."""
    if not isinstance(run, dict):
        return []
    keys = sorted((k for k in run if k.startswith("step_")), key=lambda k: (len(k), k))
    return [run[k].get("step_count") if isinstance(run[k], dict) else None for k in keys]


def _show(steps: list[Any]) -> str:
    return ", ".join(map(str, steps[:4])) + (", ..." if len(steps) > 4 else "")


def _metrics(dirs: list[Path]) -> str:
    """metrics.jsonl of the whole run: per step, the parts' per-seed values side by side;
    `time` summed over the parts."""
    per_part = [
        [json.loads(t) for t in read_text(d / METRICS).splitlines() if t.strip()] for d in dirs
    ]
    steps = [[line["step"] for line in lines] for lines in per_part]
    if any(s != steps[0] for s in steps):
        raise UsageError(f"{dirs[0]}: the parts' {METRICS} log different evaluation steps")
    lines = []
    for rows in zip(*per_part, strict=True):
        lines.append(
            {
                "step": rows[0]["step"],
                "time": round(sum(r["time"] for r in rows), 3),
                "eval": _join_lists([r["eval"] for r in rows]),
                "train": _join_lists([r["train"] for r in rows]) if rows[0]["train"] else {},
            }
        )
    return "".join(json.dumps(line) + "\n" for line in lines)


def _params(dirs: list[Path], name: str) -> bytes | None:
    """The parts' parameters stacked on the seed axis, None unless every part kept them."""
    if not all(stored(d / name).is_file() for d in dirs):  # plain or gzipped
        return None
    import jax
    from flax import serialization

    trees = [serialization.msgpack_restore(read_bytes(d / name)) for d in dirs]
    return serialization.msgpack_serialize(
        jax.tree.map(lambda *leaves: np.concatenate(leaves, axis=0), *trees)
    )


def _transfer(dirs: list[Path]) -> dict[str, Any] | None:
    """transfer.json of the whole run: each target's per-seed episodes side by side (a part
    plays its seeds on the whole run's transfer key); None where no part has one, refused where
    only some do or their targets differ."""
    held = [stored(d / TRANSFER).is_file() for d in dirs]
    if not any(held):
        return None
    if not all(held):
        missing = ", ".join(d.name for d, h in zip(dirs, held, strict=True) if not h)
        raise UsageError(f"{missing}: no {TRANSFER}, which the other parts have")
    parts = [_read(d / TRANSFER) for d in dirs]
    out = {}
    for name, first in parts[0].items():
        same = {k: v for k, v in first.items() if k != "metrics"}
        for d, part in zip(dirs, parts, strict=True):
            target = part.get(name, {})
            if {k: v for k, v in target.items() if k != "metrics"} != same:
                raise UsageError(f"{d}: its {TRANSFER} target {name!r} differs from {dirs[0]}'s")
        out[name] = {**same, "metrics": _join_lists([p[name]["metrics"] for p in parts])}
    return out


def merge(dirs: list[Path], dest: Path, remove_parts: bool = False) -> Path:
    """Write the whole run's directory `dest` from its parts (see the module docstring)."""
    dest = Path(dest)
    here = dest.resolve()
    for d in map(Path, dirs):  # removing the parts would take the merged run, or the reverse
        there = d.resolve()
        if here == there or here.is_relative_to(there) or there.is_relative_to(here):
            raise UsageError(
                f"--out {dest}: inside or around the part {d}; merge into a directory of its own"
            )
    dirs, metas, total = check_parts([Path(d) for d in dirs])
    record = _record(dirs, metas)  # refused before anything is written
    transfer = _transfer(dirs)
    if (dest / META).exists():
        raise UsageError(f"{dest}: a run is there already; merge into another directory")
    dest.mkdir(parents=True, exist_ok=True)
    metric = metas[0]["config"]["protocol"]["metric"]
    timings = _timings(metas)
    finals = [_read(d / FINAL) for d in dirs]
    final = dict(finals[-1])
    final.update(
        seeds=total,
        created=finals[0].get("created"),
        **{k: _join_lists([f[k] for f in finals]) for k in PER_SEED if k in finals[0]},
        **timings,
    )
    if "best_step" in finals[0]:
        final["best_step"] = _join_lists([f["best_step"] for f in finals])
    returns = final["final"]["return"]
    final.update(return_mean=float(np.mean(returns)), return_std=_spread(returns))
    if "absolute" in final:
        final.update(
            absolute_mean=float(np.mean(final["absolute"][metric])),
            absolute_std=_spread(final["absolute"][metric]),
        )
    config = {k: v for k, v in metas[0]["config"].items() if k != "part"}
    config["name"] = dest.name
    meta = dict(metas[-1])
    meta.update(
        seeds=total,
        config=config,
        created=metas[0]["created"],
        best_step=final.get("best_step", meta.get("best_step")),
        train_metrics=[
            _join_lists(list(rows)) for rows in zip(*map(train_metrics, dirs, metas), strict=True)
        ],
        parts=[
            {
                "part": m["config"]["part"],
                "directory": d.name,
                **{k: m.get(k) for k in PART_FIELDS},
            }
            for d, m in zip(dirs, metas, strict=True)
        ],
        **timings,
    )
    codes: list[Any] = []
    for m in metas:
        if m.get("code") and m["code"] not in codes:
            codes.append(m["code"])
    if len(codes) > 1:  # parts trained on different code: name every one
        meta["codes"] = codes
    for name in PARAMS:
        data = _params(dirs, name)
        if data is not None:
            atomic_write(dest / name, data)
    atomic_write(dest / METRICS, _metrics(dirs))
    header = (
        f"# resolved config of this run, merged by `marl merge` from its parts "
        f"{', '.join(d.name for d in dirs)}\n"
    )
    atomic_write(dest / CONFIG, header + yaml.safe_dump(config, sort_keys=False))
    if transfer is not None:
        write_json(dest / TRANSFER, transfer)
    write_json(dest / FINAL, final)
    write_json(dest / META, meta)
    write_json(dest / RECORD, record, indent=None)  # last: the run is complete
    if remove_parts:
        for d in dirs:
            shutil.rmtree(d)
    return dest


def cell_parts(parent: Path, name: str) -> list[Path]:
    """The part directories of run `name` under `parent` (`name.partA-B`)."""
    return sorted(p for p in parent.glob(f"{name}.part*-*") if p.is_dir())


def parts_done(parent: Path, name: str) -> list[tuple[int, int]]:
    """(first, stop) of each finished part of run `name` under `parent`."""
    out = []
    for d in cell_parts(parent, name):
        meta = d / META
        if meta.is_file():
            m = json.loads(meta.read_text())
            if m.get("finished") and part_of(m) and has_record(d):
                out.append(part_of(m))
    return sorted(out)
