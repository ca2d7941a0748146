"""Draw pathfinding frames with matplotlib (Agg, no display); `marl.run.saved.render` animates them.

A frame is `Pathfinding.render_frame(state)`: `obstacles` [H, W] (row 0 at the bottom), `pos`
[N, 2], `radius` [N], `goal` [N, 2], `goal_radius`, `heading` [N], `diffdrive` [N] and
`on_goal` [N]. Obstacle cells are dark squares; each agent is a disc in its own colour (a
heading tick for differential-drive agents) and its goal a ring of the same colour, joined to
the agent by a faint line until it arrives.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.patches import Circle

OBSTACLE_COLOUR = "#3b3b3b"
FLOOR_COLOUR = "#f4f1e8"

__all__ = ["draw_frame"]


def _colours(n: int) -> np.ndarray:
    return colormaps["tab20"](np.arange(n) % 20)


def draw_frame(ax: Axes, frame: dict[str, Any], title: str = "") -> None:
    """Draw one frame on `ax` (cleared first)."""
    ax.clear()
    grid = np.asarray(frame["obstacles"], bool)
    h, w = grid.shape
    image = np.where(grid[..., None], [0.23, 0.23, 0.23], [0.96, 0.945, 0.91])
    ax.imshow(image, origin="lower", extent=(0, w, 0, h), interpolation="nearest", zorder=0)
    ax.set_xlim(0, w)
    ax.set_ylim(0, h)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title, fontsize=9)
    pos, goal = np.asarray(frame["pos"]), np.asarray(frame["goal"])
    radius, heading = np.asarray(frame["radius"]), np.asarray(frame["heading"])
    diffdrive, on_goal = np.asarray(frame["diffdrive"], bool), np.asarray(frame["on_goal"], bool)
    colours = _colours(len(pos))
    for i in range(len(pos)):
        c = colours[i]
        ring = max(float(frame["goal_radius"]), 0.15)
        ax.add_patch(Circle(goal[i], ring, fill=False, ec=c, lw=1.2, zorder=2))
        if not on_goal[i]:
            ax.plot(*zip(pos[i], goal[i], strict=True), color=c, lw=0.5, alpha=0.35, zorder=1)
        ax.add_patch(Circle(pos[i], radius[i], color=c, alpha=0.9, zorder=3))
        if diffdrive[i]:
            tip = pos[i] + radius[i] * np.array([np.cos(heading[i]), np.sin(heading[i])])
            ax.plot(*zip(pos[i], tip, strict=True), color="k", lw=1.0, zorder=4)
    ax.text(
        0.3,
        h - 0.3,
        f"on goal: {int(on_goal.sum())}/{len(pos)}",
        fontsize=7,
        va="top",
        zorder=5,
        bbox={"fc": "white", "alpha": 0.7, "lw": 0},
    )
