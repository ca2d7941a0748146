"""The suite's tables: the rows printed as `marl bench --suite` measures, and
`results/bench.md` written from its records (notes kept across regenerations)."""

from __future__ import annotations

import os
import platform
from typing import Any

import jax

from marl.results.tables import format_row

PARTS = ("envs", "train", "scaling")  # the suite's parts, in order
MIB = 1024 * 1024


def machine() -> str:
    """One line: cores, processor, memory, jax version and device."""
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1024**3
        mem_s = f", {mem:.0f} GB"
    except (ValueError, OSError, AttributeError):
        mem_s = ""
    device = jax.devices()[0]
    return (
        f"{os.cpu_count()} cores ({platform.processor() or platform.machine()}){mem_s}; "
        f"jax {jax.__version__} on {device.platform} ({device.device_kind})"
    )


def _fmt(x: float) -> str:
    return f"{x:,.0f}"


def _mib(b: int) -> str:
    return f"{b / MIB:,.1f}" if b else "n/a"


ENV_HEADERS = [
    "env",
    "num_envs",
    "steps",
    "marl steps/s",
    "agent-steps/s",
    "compile s",
    "memory MiB",
    "peer",
    "peer steps/s",
    "peer compile s",
    "marl/peer",
]
TRAIN_HEADERS = [
    "learner",
    "env",
    "seeds x envs",
    "steps/s",
    "agent-steps/s",
    "compile s",
    "memory MiB",
    "env-only steps/s",
    "env %",
    "policy %",
    "update %",
]
SCALING_HEADERS = [
    "family",
    "agents",
    "num_envs",
    "steps/s",
    "agent-steps/s",
    "compile s",
    "memory MiB",
]


def env_row(rec: dict[str, Any]) -> list[str]:
    m = rec["marl"]
    row = [
        rec["case"],
        str(m["num_envs"]),
        str(m["steps"]),
        _fmt(m["steps_per_s"]),
        _fmt(m["agent_steps_per_s"]),
        f"{m['compile_s']:.2f}",
        _mib(m["memory_bytes"]),
    ]
    if "ratio" in rec:
        p = rec[rec["peer"]]
        row += [p["env"], _fmt(p["steps_per_s"]), f"{p['compile_s']:.2f}", f"{rec['ratio']:.2f}"]
    else:
        row += ["-", "-", "-", "-"]
    return row


def train_row(label: str, r: dict[str, Any]) -> list[str]:
    env_sps = r["seeds"] * r["updates"] * r["env_steps_per_update"] / r["env_s"]
    return [
        label,
        r["env"],
        f"{r['seeds']} x {r['num_envs']}",
        _fmt(r["steps_per_s"]),
        _fmt(r["agent_steps_per_s"]),
        f"{r['compile_s']:.1f}",
        _mib(r["memory_bytes"]),
        _fmt(env_sps),
        f"{100 * r['share_env']:.0f}",
        f"{100 * r['share_policy']:.0f}",
        f"{100 * r['share_update']:.0f}",
    ]


def scaling_row(r: dict[str, Any]) -> list[str]:
    return [
        r["family"],
        str(r["num_agents"]),
        str(r["num_envs"]),
        _fmt(r["steps_per_s"]),
        _fmt(r["agent_steps_per_s"]),
        f"{r['compile_s']:.2f}",
        _mib(r["memory_bytes"]),
    ]


class Printer:
    """Prints a fixed-width table row by row (progress on long suites)."""

    def __init__(self, title: str, headers: list[str], widths: list[int]):
        self.widths = widths
        print(f"\n{title}", flush=True)
        print(format_row(headers, widths))
        print(format_row(["-" * w for w in widths], widths), flush=True)

    def row(self, cells: list[str]) -> None:
        print(format_row(cells, self.widths), flush=True)


def _md_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(headers) + " |",
        "|" + "---|" * len(headers),
        *("| " + " | ".join(r) + " |" for r in rows),
    ]


SECTIONS = {  # suite part -> its heading in results/bench.md
    "envs": "## Environment stepping",
    "train": "## Training loops",
    "scaling": "## Scaling with the number of agents",
}


def provenance(results: dict[str, Any], command: str, part: str) -> str:
    """The line under a part's table: when, by which command, on what machine (the part's
    `measured` entry of merged records, else the run's own)."""
    run = {**results, "command": command, **results.get("measured", {}).get(part, {})}
    best = f", best of {run['repeats']} timed calls" if run.get("repeats") else ""
    return (
        f"Measured by `{run['command']}` on {run['date']} ({run['wall_s'] / 60:.0f} min for "
        f"the run{best}); machine: {run['machine']}."
    )


def _head(results: dict[str, Any]) -> str:
    """The title and the method paragraph of results/bench.md."""
    return "\n".join(
        [
            "# Benchmarks",
            "",
            "Method (`marl.bench.envs`, both sides in one process): `jit` of a `lax.scan` over "
            "the steps of `vmap(step)`; compile s = trace, lower and compile; steps/s = the best "
            "of the timed calls (`--repeats`, named with each table's run), to "
            "`block_until_ready`, each continuing from the last, after untimed calls that "
            "cover one episode limit (so resets run at their steady-state rate on both sides); "
            "memory = XLA's estimate of the program's peak (arguments + outputs + temporaries). "
            "Absolute numbers move by about ±30% run to run on a shared 2-core machine; the "
            "ratios, measured side by side, are steadier. Each table names the run it comes "
            "from.",
            "",
        ]
    )


INTROS = {  # what each part's table measures, under its provenance line
    "envs": "Random valid actions (one joint draw, from the available actions where the env "
    "masks them), auto-reset computed on the steps where an episode ended, on both sides; slow "
    "tasks run shorter scans (the steps column). Peers: JaxMARL's MPE (the same task: agent "
    "and landmark counts, observation sizes checked) and `HeuristicEnemySMAX` (the same SMAC "
    "map, with marl's episode limit and without SMAX's extra observations, as marl's default), "
    "CAMAR's `random_grid` (its default 20 x 20, 32 agents; timed from fresh resets, since "
    "random agents' episodes all run to the limit and reset together).",
    "train": "The whole training step (rollout and update; `vmap` over seeds), on a scan of "
    "updates covering ~20k env steps per seed. Where the time goes, at the same batch and "
    "number of env steps: env % = random-action stepping, policy % = stepping with the "
    "learner's policy minus that, update % = the rest of the training step (learning, buffer, "
    "bookkeeping). mappo[jaxmarl-mpe] uses JaxMARL's published MAPPO-MPE settings (16 envs x "
    "128 steps, layers of 128 around a GRU of 128, 4 epochs x 4 minibatches).",
    "scaling": "`marl.bench.suite.scaled_env`: worlds grow with the agent count so densities "
    "stay those of the standard task; about 1,024 agents in flight (max(1, 1024 // N) "
    "parallel envs); 50 steps per timed call.",
}


def _section(results: dict[str, Any], command: str, part: str) -> str:
    """One part's table with its heading, provenance line and introduction."""
    if part == "envs":
        table = _md_table(ENV_HEADERS, [env_row(rec) for rec in results["envs"]])
    elif part == "train":
        table = _md_table(TRAIN_HEADERS, [train_row(r["label"], r) for r in results["train"]])
    else:
        table = _md_table(SCALING_HEADERS, [scaling_row(r) for r in results["scaling"]])
    lines = [SECTIONS[part], "", provenance(results, command, part), "", INTROS[part], ""]
    return "\n".join([*lines, *table, ""])


def markdown(results: dict[str, Any], command: str) -> str:
    """`results` of `run_suite` (or records merged by `merge_records`) as the generated part
    of results/bench.md."""
    sections = [_section(results, command, p) for p in PARTS if p in results]
    return "\n".join([_head(results), *sections])


NOTES_MARK = "<!-- notes: kept when the suite regenerates this file -->"


def _sections(text: str) -> dict[str, str]:
    """The generated tables of an earlier results/bench.md, by suite part (heading to the next
    heading or the notes)."""
    text = text.split(NOTES_MARK, 1)[0]
    found = {}
    for part, heading in SECTIONS.items():
        start = text.find(heading + "\n")
        if start < 0:
            continue
        ends = [text.find(h + "\n", start + 1) for h in SECTIONS.values()]
        ends = [e for e in ends if e > start]
        found[part] = text[start : min(ends) if ends else len(text)].rstrip() + "\n"
    return found


def write_markdown(path: str, results: dict[str, Any], command: str) -> None:
    """Write `markdown(results)` to `path`, keeping anything below NOTES_MARK and the tables of
    parts this run did not measure (each keeps its own provenance line)."""
    notes, kept = "", {}
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
        if NOTES_MARK in old:
            notes = old[old.index(NOTES_MARK) :]
        kept = _sections(old)
    body = [
        _section(results, command, p) if p in results else kept[p]
        for p in PARTS
        if p in results or p in kept
    ]
    text = "\n".join([_head(results), *body]) + "\n" + (notes or NOTES_MARK + "\n")
    with open(path, "w") as f:
        f.write(text)


def merge_records(old: dict[str, Any], results: dict[str, Any], command: str) -> dict[str, Any]:
    """Suite records `results` laid over an earlier file's `old`: the parts measured now
    replace theirs, the others stay, and `measured` says which run each part comes from."""
    keep = {p: old[p] for p in PARTS if p in old and p not in results}
    earlier = old.get("measured") or {
        p: {k: old.get(k) for k in ("date", "machine", "wall_s", "repeats")} for p in keep
    }
    now = {k: results[k] for k in ("date", "machine", "wall_s", "repeats")}
    measured = {p: earlier[p] for p in keep if p in earlier}
    measured.update({p: {**now, "command": command} for p in PARTS if p in results})
    return {**results, **keep, "measured": measured}
