"""Cells re-run by `marl benchmark verify` (`marl.run.campaigns.verify`), as the board shows
them: one line per outcome, a Markdown section, and the facts of a cell's page."""

from __future__ import annotations

from typing import Any


def describe(o: dict[str, Any]) -> str:
    """One line: `combat/3m/il: 2 of 5 seeds re-run at abc123: won IQM 0.41 inside [..]`."""
    code = o.get("code") or {}
    commit = (code.get("commit") or "uncommitted code")[:12] + (
        " with uncommitted changes" if code.get("dirty") else ""
    )
    head = f"{o['cell']}: {o['seeds_rerun']} of {o['seeds']} seeds re-run at {commit}"
    if "rerun" not in o:
        return f"{head}: {o['verdict']}"
    iv, again = o["committed"], o["rerun"]
    seeds = ""
    if o.get("committed_seeds") and o.get("rerun_seeds"):
        (a, b), (c, d) = o["committed_seeds"], o["rerun_seeds"]
        seeds = f" (seeds: committed {a:.3f} to {b:.3f}, re-run {c:.3f} to {d:.3f})"
    return (
        f"{head}: {o['statistic']} {again['point']:.3f} against the committed "
        f"{iv['point']:.3f} [{iv['low']:.3f}, {iv['high']:.3f}]: {o['verdict']}{seeds}"
    )


def verified_markdown(board: dict[str, Any]) -> list[str]:
    """The cells re-run by `marl benchmark verify`, each with its outcome and commit."""
    done = [row.get("verified") for d in board["tasks"].values() for row in d["rows"]]
    done = [v for v in done if v]
    if not done:
        return []
    return [
        f"## Verified cells: {len(done)}",
        "",
        "Each re-run at the code named by `marl benchmark verify` (its first seeds, the same "
        "seeds as the committed ones): the statistic that ranks the task, over the re-run's "
        "seeds, against the committed cell's 95% interval.",
        "",
        *(f"- {describe(v)}" for v in sorted(done, key=lambda v: v["cell"])),
        "",
    ]


__all__ = ["describe", "verified_markdown"]
