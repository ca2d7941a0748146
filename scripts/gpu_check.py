"""Helper of `scripts/gpu_check.sh`: versions, the env benchmark loop, the training summary and
the markdown report of a one-off GPU check.

    python3 scripts/gpu_check.py versions OUT           versions.json: packages, jax.devices()
    python3 scripts/gpu_check.py bench OUT --tasks ...  `marl bench` per task and size, in one
                                                        process, each cell on its own
    python3 scripts/gpu_check.py train-summary OUT      train.json from OUT/runs/**/final.json
    python3 scripts/gpu_check.py report OUT             bench_gpu.md from the JSON files

`bench` calls the `marl bench` command line (`marl.cli.main`) once per (task, size), so one
size that fails (out of memory, say) costs only its own cell; each cell's records go to
OUT/bench/<task>_<n>.json as soon as it is measured, and OUT/bench_<task>.json gathers them in
the format `marl bench --json` writes (a list, one record per size: {"marl": ..., peer: ...}).
A cell still marked running when the loop starts again crashed the process before: it is
recorded as failed and skipped, so the shell can simply start the loop again. Sizes run
outermost (every task at 1 env, then at 1,024, ...), so a deadline cuts the biggest cells.

Feeds OUT/bench_gpu.md, not a committed page: figures that hold up go to `results/bench.md`
by hand (`scripts/gpu_check.sh` says so).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from anywhere: marl comes from the repository
    sys.path.insert(0, str(ROOT))

from marl.results.files import read_json, write_json  # noqa: E402

PEER_OF_FAMILY = {"particle": "jaxmarl", "combat": "jaxmarl", "pathfinding": "camar"}
PACKAGES = (
    "jax",
    "jaxlib",
    "flax",
    "optax",
    "chex",
    "orbax-checkpoint",
    "numpy",
    "scipy",
    "distrax",
    "tfp-nightly",
    "gymnax",
    "hydra-core",
    "omegaconf",
    "jaxmarl",
    "camar",
    "pytest",
)


def read_if_any(path: Path) -> Any:
    """`marl.results.files.read_json`, or None where a step left no (or a broken) file."""
    try:
        return read_json(path)
    except (OSError, ValueError):
        return None


def slug(task: str) -> str:
    return task.replace("/", "_")


# --- versions -------------------------------------------------------------------------------


def cmd_versions(args: argparse.Namespace) -> int:
    import platform
    from importlib import metadata

    info: dict[str, Any] = {"python": platform.python_version(), "packages": {}}
    for name in PACKAGES:
        try:
            info["packages"][name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            info["packages"][name] = None
    import jax

    devices = jax.devices()
    info["backend"] = jax.default_backend()
    info["devices"] = [str(d) for d in devices]
    info["device_kind"] = devices[0].device_kind
    info["device_count"] = len(devices)
    for name, version in info["packages"].items():
        print(f"{name:18} {version or '-'}")
    print(f"python             {info['python']}")
    print(f"jax.devices()      {devices}")
    print(f"device kind        {info['device_kind']}")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    write_json(Path(args.out) / "versions.json", info)
    return 0


# --- bench ----------------------------------------------------------------------------------


def parse_steps(text: str, sizes: list[int]) -> dict[int, int]:
    """`1:200,1024:100` -> {1: 200, 1024: 100}; a size not named takes the last value."""
    table = {int(k): int(v) for k, v in (item.split(":") for item in text.split(","))}
    last = list(table.values())[-1]
    return {n: table.get(n, last) for n in sizes}


def cmd_bench(args: argparse.Namespace) -> int:
    from marl.cli import main as marl_main

    out = Path(args.out)
    cells = out / "bench"
    cells.mkdir(parents=True, exist_ok=True)
    sizes = [int(n) for n in args.sizes.split(",")]
    steps = parse_steps(args.steps, sizes)
    status_path = out / "bench_status.json"
    status = read_if_any(status_path) or {}
    for n in sizes:
        for task in args.tasks:
            cell = f"{slug(task)}_{n}"
            result, running = cells / f"{cell}.json", cells / f"{cell}.running"
            if result.exists():
                continue
            if running.exists():  # the process died inside this cell last time
                running.unlink()
                status[cell] = {"task": task, "num_envs": n, "status": "crashed"}
                write_json(status_path, status)
                continue
            if status.get(cell, {}).get("status") in ("failed", "crashed") and not args.retry:
                continue
            if args.deadline and time.time() > args.deadline:
                status[cell] = {"task": task, "num_envs": n, "status": "skipped (time)"}
                write_json(status_path, status)
                continue
            peer = PEER_OF_FAMILY.get(task.split("/")[0])
            peer = None if args.no_peers else peer
            running.touch()
            t0 = time.perf_counter()
            rc, error = run_cell(marl_main, task, n, steps[n], args.repeats, result, peer)
            entry = {"task": task, "num_envs": n, "steps": steps[n], "status": "ok"}
            if rc != 0 and peer and not (args.deadline and time.time() > args.deadline):
                # the peer's side may be what failed (an import, memory): marl's side alone
                rc, alone = run_cell(marl_main, task, n, steps[n], args.repeats, result, None)
                entry["status"] = "ok, marl alone"
                entry["peer_error"] = error
                error = alone
            running.unlink(missing_ok=True)
            seconds = time.perf_counter() - t0
            if rc != 0 or not result.exists():
                entry["status"] = "failed"
                entry["error"] = error or f"exit code {rc}"
            entry["seconds"] = round(seconds, 1)
            status[cell] = entry
            write_json(status_path, status)
            print(f"[{cell}: {entry['status']} in {seconds:.1f}s]", flush=True)
    merge_bench(out, args.tasks, sizes)
    return 0


class Tail(io.TextIOBase):
    """A stream that writes through to `stream` and keeps the last lines written."""

    def __init__(self, stream: Any) -> None:
        self.stream, self.text = stream, ""

    def write(self, text: str) -> int:
        self.stream.write(text)
        self.text = (self.text + text)[-2000:]
        return len(text)

    def flush(self) -> None:
        self.stream.flush()


def run_cell(
    marl_main: Any, task: str, n: int, steps: int, repeats: int, result: Path, peer: str | None
) -> tuple[int, str | None]:
    """`marl bench TASK --num-envs N ... [--vs]`; (exit code, error line or None)."""
    argv = ["bench", task, "--num-envs", str(n), "--steps", str(steps)]
    argv += ["--repeats", str(repeats), "--json", str(result)]
    argv += ["--vs"] if peer else []  # last: --vs takes an optional value
    print(f"\n$ marl {' '.join(argv)}", flush=True)
    err = Tail(sys.stderr)
    try:
        with contextlib.redirect_stderr(err):
            rc = marl_main(argv)
    except Exception as e:  # one cell's failure (e.g. out of memory) is its own
        traceback.print_exc()
        return 1, f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300]}"
    lines = [ln for ln in err.text.splitlines() if ln.strip()]
    return rc, (lines[-1][:300] if rc != 0 and lines else None)


def merge_bench(out: Path, tasks: list[str], sizes: list[int]) -> None:
    """OUT/bench_<task>.json: the cells' records in size order, as `marl bench --json`."""
    for task in tasks:
        records = []
        for n in sizes:
            cell = read_if_any(out / "bench" / f"{slug(task)}_{n}.json")
            records += cell or []
        if records:
            write_json(out / f"bench_{slug(task)}.json", records)


# --- training -------------------------------------------------------------------------------


def cmd_train_summary(args: argparse.Namespace) -> int:
    """OUT/train.json: per (env, algo, mode) the runs' steps/s (env steps over all seeds per
    second of training, compile and evaluations excluded, as `marl train` reports) and times.
    mode: the run name before "-seed_" (vmapped; sequential-seed_k from `marl sweep seed=...`)."""
    from marl.results.protocol import RecordError
    from marl.results.runfolder import read_run

    out = Path(args.out)
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for final_path in sorted((out / "runs").glob("**/final.json")):
        try:
            run = read_run(final_path.parent)
        except RecordError:  # a run cut short or broken: no row
            continue
        final, meta = run.final, run.meta or {}
        mode = final_path.parent.name.split("-seed_")[0]
        groups.setdefault((final["env"], final["algo"], mode), []).append(
            {"final": final, "meta": meta, "dir": str(final_path.parent.relative_to(out))}
        )
    rows = []
    for (env, algo, mode), runs in sorted(groups.items()):
        steps = sum(r["final"]["env_steps"] * r["final"]["seeds"] for r in runs)
        train_s = sum(
            r["final"]["env_steps"] * r["final"]["seeds"] / r["final"]["steps_per_second"]
            for r in runs
            if r["final"]["steps_per_second"] > 0
        )
        rows.append(
            {
                "env": env,
                "algo": algo,
                "mode": mode,
                "runs": len(runs),
                "seeds": sum(r["final"]["seeds"] for r in runs),
                "env_steps_per_seed": runs[0]["final"]["env_steps"],
                "total_env_steps": steps,
                "steps_per_second": steps / train_s if train_s else None,
                "train_s": train_s,
                "compile_s": sum(r["final"]["compile_time"] for r in runs),
                "wall_s": sum(r["final"]["wall_time"] for r in runs),
                "run_walls": [r["final"]["wall_time"] for r in runs],
                "device": runs[0]["final"].get("device") or runs[0]["meta"].get("device"),
                "runs_dirs": [r["dir"] for r in runs],
            }
        )
    write_json(out / "train.json", rows)
    for row in rows:
        sps = row["steps_per_second"]
        print(
            f"{row['env']} {row['algo']} {row['mode']}: {row['runs']} run(s), {row['seeds']} "
            f"seeds, {sps:,.0f} steps/s, {row['wall_s']:.0f}s wall"
            if sps
            else f"{row['env']} {row['algo']} {row['mode']}: no steps/s"
        )
    return 0


# --- report ---------------------------------------------------------------------------------


def table(headers: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]


def num(x: Any, fmt: str = ",.0f") -> str:
    return "-" if x is None else format(x, fmt)


def steps_log(out: Path) -> list[dict[str, Any]]:
    rows = []
    path = out / "steps.tsv"
    if path.exists():
        for line in path.read_text().splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            name, rc, seconds, *rest = line.split("\t")
            rows.append({"step": name, "rc": int(rc), "seconds": float(seconds), "note": rest})
    return rows


def pytest_summary(out: Path) -> str:
    log = out / "tests.log"
    if not log.exists():
        return "not run"
    rc = {s["step"]: s["rc"] for s in steps_log(out)}.get("tests")
    cut = "stopped by the time limit; " if rc in (124, 137) else ""
    lines = [ln.strip("= ").strip() for ln in log.read_text(errors="replace").splitlines()]
    closing = [ln for ln in lines if " passed" in ln or " failed" in ln or " error" in ln]
    if closing:
        return cut + closing[-1]
    progress = [ln for ln in lines if ln.endswith("%]")]  # -q: a line of dots per 72 tests
    if progress:
        done = progress[-1].rsplit("[", 1)[1].rstrip("]").strip()
        failed = "F" in "".join(p.rsplit("[", 1)[0] for p in progress)
        return f"{cut}no closing line; {done} of the tests run" + (
            ", some failed" if failed else ""
        )
    return cut + (lines[-1] if lines else "no output")


def bench_section(out: Path, versions: dict[str, Any]) -> list[str]:
    status = read_if_any(out / "bench_status.json") or {}
    tasks = list(dict.fromkeys(s["task"] for s in status.values()))
    # a bench step cut by its time limit never merged its cells: merge what it measured
    merge_bench(out, tasks, sorted({s["num_envs"] for s in status.values()}))
    lines = ["## Environment stepping (`marl bench`)", ""]
    if not tasks:
        return [*lines, "No bench cells were run.", ""]
    lines += [
        "Random valid actions with auto-reset, both sides in one process (`marl.bench`); "
        "steps/s = env steps per second, the best of the timed calls after untimed calls "
        "covering one episode limit; compile s = trace, lower and compile.",
        "",
    ]
    for task in tasks:
        cells = sorted(
            (s for s in status.values() if s["task"] == task), key=lambda s: s["num_envs"]
        )
        records = {
            r["marl"]["num_envs"]: r for r in read_if_any(out / f"bench_{slug(task)}.json") or []
        }
        peer = PEER_OF_FAMILY.get(task.split("/")[0])
        peer_name = next(
            (r[peer]["env"] for r in records.values() if peer and peer in r), peer or "-"
        )
        lines += [f"### {task}" + (f" vs {peer} ({peer_name})" if peer else " (no peer)"), ""]
        headers = ["num_envs", "steps", "marl steps/s", "marl compile s", "marl MiB"]
        if peer:
            headers += [f"{peer} steps/s", f"{peer} compile s", f"marl/{peer}"]
        headers += ["status"]
        rows = []
        for cell in cells:
            r = records.get(cell["num_envs"])
            mine = r["marl"] if r else {}
            theirs = r.get(peer, {}) if r and peer else {}
            row = [
                f"{cell['num_envs']:,}",
                str(cell.get("steps", "-")),
                num(mine.get("steps_per_s")),
                num(mine.get("compile_s"), ".1f"),
                num(mine.get("memory_bytes", 0) / 2**20 if mine else None, ",.1f"),
            ]
            if peer:
                ratio = (
                    mine["steps_per_s"] / theirs["steps_per_s"]
                    if mine and theirs and theirs.get("steps_per_s")
                    else None
                )
                row += [
                    num(theirs.get("steps_per_s")),
                    num(theirs.get("compile_s"), ".1f"),
                    num(ratio, ".2f"),
                ]
            note = cell["status"]
            if cell.get("error"):
                note += f": {cell['error']}"
            if cell.get("peer_error"):
                note += f"; {peer} failed: {cell['peer_error']}"
            note = note.replace("|", "/")
            row.append(note + (f" ({cell['seconds']:.0f}s)" if "seconds" in cell else ""))
            rows.append(row)
        lines += [*table(headers, rows), ""]
    return lines


def train_section(out: Path) -> list[str]:
    rows = read_if_any(out / "train.json") or []
    lines = ["## Training (`marl train`): seeds vmapped against seeds one after another", ""]
    if not rows:
        return [*lines, "No training run finished.", ""]
    lines += [
        "steps/s = env steps over all seeds per second of training (compile and evaluations "
        "excluded, as `marl train` reports). vmapped: one `marl train seeds=N` run, all seeds "
        "in one program; sequential: `marl sweep seed=0,1,... seeds=1`, one run per seed in "
        "one process, with XLA's persistent compilation cache on so that the runs after the "
        "first reuse its compiled programs. compile s and wall s are summed over runs; "
        "process s is the whole command (start-up, every run, the sweep's report).",
        "",
    ]
    process = {s["step"]: s["seconds"] for s in steps_log(out)}
    headers = [
        "env",
        "algo",
        "steps per seed",
        "vmapped seeds",
        "vmapped steps/s",
        "sequential runs",
        "sequential steps/s",
        "vmapped / sequential",
        "compile s (v / s)",
        "wall s (v / s)",
        "process s (v / s)",
    ]
    pairs: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        pairs.setdefault((r["env"], r["algo"]), {})[r["mode"]] = r
    body = []
    for (env, algo), modes in pairs.items():
        v, s = modes.get("vmapped", {}), modes.get("sequential", {})
        ratio = (
            v["steps_per_second"] / s["steps_per_second"]
            if v.get("steps_per_second") and s.get("steps_per_second")
            else None
        )
        per_seed = (v or s).get("env_steps_per_seed")
        seq_wall = num(s.get("wall_s"), ".0f")
        if v.get("seeds") and s.get("runs") and s["runs"] < v["seeds"]:
            # the runs after the first load their programs from the cache: the missing ones
            # are estimated from those (else from the first)
            walls = s["run_walls"][1:] or s["run_walls"]
            estimate = s["wall_s"] + (v["seeds"] - s["runs"]) * sum(walls) / len(walls)
            seq_wall += f" (~{estimate:.0f} for {v['seeds']})"
        body.append(
            [
                env,
                algo,
                num(per_seed),
                str(v.get("seeds", "-")),
                num(v.get("steps_per_second")),
                str(s.get("runs", "-")),
                num(s.get("steps_per_second")),
                num(ratio, ".2f"),
                f"{num(v.get('compile_s'), '.0f')} / {num(s.get('compile_s'), '.0f')}",
                f"{num(v.get('wall_s'), '.0f')} / {seq_wall}",
                f"{num(process.get(f'train_{algo}_vmapped'), '.0f')} / "
                f"{num(process.get(f'train_{algo}_sequential'), '.0f')}",
            ]
        )
    return [*lines, *table(headers, body), ""]


def cmd_report(args: argparse.Namespace) -> int:
    out = Path(args.out)
    versions = read_if_any(out / "versions.json") or {}
    packages = versions.get("packages", {})
    device = versions.get("device_kind", "unknown")
    lines = [
        "# GPU check",
        "",
        f"Made by `bash scripts/gpu_check.sh OUT{' --small' if args.small else ''}` on "
        f"{time.strftime('%Y-%m-%d')}; device: {device} "
        f"({versions.get('device_count', '?')} x, backend {versions.get('backend', '?')}); "
        f"python {versions.get('python', '?')}.",
        "",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in packages.items() if v) + ".",
        "",
    ]
    gpu = out / "nvidia-smi.txt"
    if gpu.exists() and gpu.read_text().strip():
        lines += ["```", *gpu.read_text().strip().splitlines()[:3], "```", ""]
    lines += bench_section(out, versions)
    lines += train_section(out)
    lines += ["## Unit tests", "", f"pytest: {pytest_summary(out)} (OUT/tests.log).", ""]
    log = steps_log(out)
    if log:
        lines += ["## Steps", ""]
        lines += table(
            ["step", "exit code", "seconds"],
            [[s["step"], str(s["rc"]), f"{s['seconds']:.0f}"] for s in log],
        )
        total = sum(s["seconds"] for s in log)
        failed = [s["step"] for s in log if s["rc"] != 0]
        lines += ["", f"{total:.0f} s in all; failed: {', '.join(failed) or 'none'}.", ""]
    (out / "bench_gpu.md").write_text("\n".join(lines))
    print(f"wrote {out / 'bench_gpu.md'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("versions")
    s.add_argument("out")
    s.set_defaults(func=cmd_versions)
    s = sub.add_parser("bench")
    s.add_argument("out")
    s.add_argument("--tasks", nargs="+", required=True)
    s.add_argument("--sizes", required=True, help="num-envs, comma-separated")
    s.add_argument("--steps", required=True, help="steps per size, e.g. 1:200,1024:100")
    s.add_argument("--repeats", type=int, default=3)
    s.add_argument("--deadline", type=float, default=0.0, help="epoch s; later cells skipped")
    s.add_argument("--no-peers", action="store_true")
    s.add_argument("--retry", action="store_true", help="measure failed and crashed cells again")
    s.set_defaults(func=cmd_bench)
    s = sub.add_parser("train-summary")
    s.add_argument("out")
    s.set_defaults(func=cmd_train_summary)
    s = sub.add_parser("report")
    s.add_argument("out")
    s.add_argument("--small", action="store_true")
    s.set_defaults(func=cmd_report)
    args = p.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
