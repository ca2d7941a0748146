"""Draw grid frames with matplotlib (Agg, no display); `marl.run.saved.render` animates them.

A frame is `GridMAPF.render_frame(state)`: `obstacles` [H, W] bool, `pos` and `goal` [N, 2]
(x the row, drawn top to bottom as POGEMA's own viewer does) and `active` [N]. Obstacles are
dark cells; each agent is a disc in its own colour and its goal a square outline of the same
colour; an agent that reached its goal under `on_target="finish"` has left the grid and is not
drawn.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.patches import Circle, Rectangle

__all__ = ["draw_frame"]


def draw_frame(ax: Axes, frame: dict[str, Any], title: str = "") -> None:
    """Draw one frame on `ax` (cleared first)."""
    ax.clear()
    grid = np.asarray(frame["obstacles"], bool)
    h, w = grid.shape
    image = np.where(grid[..., None], [0.23, 0.23, 0.23], [0.96, 0.945, 0.91])
    ax.imshow(image, origin="upper", extent=(0, w, h, 0), interpolation="nearest", zorder=0)
    ax.set_xlim(0, w)
    ax.set_ylim(h, 0)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title, fontsize=9)
    pos, goal = np.asarray(frame["pos"]), np.asarray(frame["goal"])
    active = np.asarray(frame["active"], bool)
    colours = colormaps["tab20"](np.arange(len(pos)) % 20)
    for i in range(len(pos)):
        gx, gy = goal[i]
        ax.add_patch(Rectangle((gy + 0.15, gx + 0.15), 0.7, 0.7, fill=False, ec=colours[i], lw=1.2))
        if active[i]:
            x, y = pos[i]
            ax.add_patch(Circle((y + 0.5, x + 0.5), 0.38, color=colours[i], alpha=0.9, zorder=3))
    done = int((~active).sum()) if frame.get("finish") else int(np.all(pos == goal, -1).sum())
    ax.text(0.2, h + 0.25, f"on goal: {done}/{len(pos)}", fontsize=7, va="top")  # below
