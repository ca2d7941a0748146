"""What reaching a goal does: POGEMA's `on_target` modes, as one part, and their metrics.

- ``finish`` (POGEMA's default): an agent on its goal is paid 1 once, leaves the grid (it no
  longer blocks anybody) and stops acting; the episode ends when every agent has. Metrics as
  POGEMA's wrappers: ISR (the fraction of agents that reached their goal), CSR (all did) and
  ep_length (the mean over agents of the step each finished, or the episode's last, plus 1).
- ``nothing``: agents stay on the grid; every agent is paid 1 when all stand on their goals at
  once, which ends the episode (POGEMA's cooperative finish). Metrics: CSR and ISR at the
  episode's end, ep_length, sum of costs (SoC) and makespan, an agent's cost being the step it
  last arrived at its goal and stayed (the last step if it is not there), plus 1.
- ``restart`` (lifelong MAPF): an agent on its goal is paid 1 and gets a new goal: the next of
  its goal sequence where the instance gives one, else a cell drawn uniformly from its
  connected component, its own cell excluded (POGEMA's `generate_new_target`). The episode
  runs to its limit. Metric: avg_throughput, goals reached per step (over the episode limit).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp

Array = jax.Array
MODES = ("finish", "nothing", "restart")
METRICS = {
    "finish": ("isr", "csr", "ep_length"),
    "nothing": ("isr", "csr", "ep_length", "soc", "makespan"),
    "restart": ("avg_throughput",),
}
LOWER_IS_BETTER = ("ep_length", "soc", "makespan")


@dataclass(frozen=True)
class OnTarget:
    """The on-target mode: ``finish``, ``nothing`` or ``restart`` (module docstring)."""

    mode: str = "finish"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown on_target {self.mode!r}; valid: {', '.join(MODES)}")

    @property
    def metrics(self) -> tuple[str, ...]:
        return METRICS[self.mode]

    @property
    def headline(self) -> str:
        return "avg_throughput" if self.mode == "restart" else "csr"


class GoalCells(NamedTuple):
    """The free cells grouped by connected component, for drawing lifelong goals: built once
    per map at reset (`goal_cells`), read by every step's draw (`new_goals`)."""

    order: Array  # [C] int32 flat cells sorted by component, each component's run in index order
    first: Array  # [C] int32 where each cell's component starts in `order`
    members: Array  # [C] int32 the number of cells in each cell's component


def goal_cells(labels: Array) -> GoalCells:
    """The table of `labels` ([H, W] component labels, `maps.components`: the component's
    smallest flat index, obstacles H * W): one stable sort of the cells."""
    flat = labels.reshape(-1)
    c = flat.size
    order = jnp.argsort(flat, stable=True).astype(jnp.int32)
    rank = jnp.zeros(c + 1, jnp.int32).at[order].set(jnp.arange(c, dtype=jnp.int32))
    sizes = jnp.zeros(c + 1, jnp.int32).at[flat].add(1)
    return GoalCells(order=order, first=rank[flat], members=sizes[flat])


def new_goals(key: Array, cells: GoalCells, pos: Array, width: int) -> Array:
    """[N, 2] a new goal for each agent at `pos` [N, 2] on a grid `width` cells wide: a cell of
    its component other than its own, uniformly (the agents that did not reach their goal get
    one too; the caller keeps theirs). An agent alone in its component keeps its cell.

    An index into the agent's run of `cells.order`, one past it from the agent's own place on
    (the run is in index order): a number per agent, where a categorical over every cell
    costs N * H * W random numbers (99% of a lifelong step's work on grid/lifelong20)."""
    here = pos[:, 0] * width + pos[:, 1]
    first, count = cells.first[here], cells.members[here]
    j = first + jax.random.randint(key, here.shape, 0, jnp.maximum(count - 1, 1))
    size = cells.order.shape[0]
    cell = cells.order[j]
    cell = jnp.where(cell >= here, cells.order[jnp.minimum(j + 1, size - 1)], cell)
    cell = jnp.where(count > 1, cell, here)
    return jnp.stack([cell // width, cell % width], axis=-1).astype(jnp.int32)


def episode_metrics(
    mode: str, step: Array, on_goal: Array, reached: Array, solve: Array, before: Array, limit: int
) -> dict[str, Array]:
    """The mode's metrics as if the episode ended at `step` (0-based): `on_goal` [N] now,
    `reached` [N] goals reached so far, `solve` [N] the step each finished (finish) or last
    arrived to stay (nothing), -1 for none, and `before` [N] that of the step before. An
    agent that leaves its goal in the episode's last step keeps its arrival there, as
    POGEMA's SumOfCostsAndMakespanMetric does (it forgets an arrival only when the episode
    goes on)."""
    n = on_goal.shape[0]
    f = jnp.float32
    if mode == "restart":
        return {"avg_throughput": jnp.sum(reached).astype(f) / limit}
    kept = jnp.where(solve >= 0, solve, before)
    cost = jnp.where(kept >= 0, kept, step)
    if mode == "finish":
        done = jnp.sum(reached)
        return {
            "isr": done.astype(f) / n,
            "csr": (done == n).astype(f),
            "ep_length": jnp.mean(cost.astype(f)) + 1.0,
        }
    return {
        "isr": jnp.mean(on_goal.astype(f)),
        "csr": jnp.all(on_goal).astype(f),
        "ep_length": (step + 1).astype(f),
        "soc": (jnp.sum(cost) + n).astype(f),
        "makespan": (jnp.max(cost) + 1).astype(f),
    }
