"""Draw swarm frames with matplotlib (Agg, no display needed); `marl.run.saved.render`
animates them.

A frame is `Swarm.render_frame(state)`: the task, the torus `size` and its `cells`, agent
`pos` [N, 2], `angle` [N] and the current `order` parameter. Vicsek agents are arrows along
their heading; Kuramoto oscillators are dots coloured by phase; aggregating agents are dots.
The cell grid is drawn faintly (an agent sees the cells around its own).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib import colormaps
from matplotlib.axes import Axes

AGENT = "#1f4e79"

__all__ = ["draw_frame"]


def draw_frame(ax: Axes, frame: dict[str, Any], title: str = "") -> None:
    """Draw one frame on `ax` (cleared first)."""
    ax.clear()
    size, cells = float(frame["size"]), int(frame["cells"])
    ax.set_xlim(0, size)
    ax.set_ylim(0, size)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    for k in range(1, cells):
        ax.axhline(k * size / cells, color="#e5e5e5", lw=0.5, zorder=0)
        ax.axvline(k * size / cells, color="#e5e5e5", lw=0.5, zorder=0)
    pos, angle = np.asarray(frame["pos"]), np.asarray(frame["angle"])
    task = frame["task"]
    if task == "polarisation":
        length = 0.025 * size
        ax.quiver(
            pos[:, 0],
            pos[:, 1],
            np.cos(angle),
            np.sin(angle),
            color=AGENT,
            angles="xy",
            scale_units="xy",
            scale=1 / length,
            width=0.004,
            zorder=2,
        )
    elif task == "synchrony":
        colour = colormaps["hsv"]((angle + np.pi) / (2 * np.pi))
        ax.scatter(pos[:, 0], pos[:, 1], s=14, c=colour, zorder=2)
    else:
        ax.scatter(pos[:, 0], pos[:, 1], s=8, color=AGENT, zorder=2)
    label = f"{task} {frame['order']:.2f}"
    box = {"fc": "white", "alpha": 0.7, "lw": 0}
    ax.text(0.02 * size, 0.98 * size, label, fontsize=7, va="top", zorder=3, bbox=box)
    if title:
        ax.set_title(title, fontsize=9)
