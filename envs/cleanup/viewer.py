"""Draw cleanup frames with matplotlib (Agg, no display needed); `marl.run.saved.render`
animates them.

A frame is `Cleanup.render_frame(state)`: the sea's `size`, vessel `pos` [N, 2], `heading`
[N], `signal` [N], `catch` [N], floating `plastic` [K, 2], river `sources` [S, 2], the current
sampled on a grid (`current_grid`, `current`), `collect_radius` and the `port` (or None).
Currents are grey arrows, plastic orange dots, sources brown squares; each vessel is a blue
wedge pointing along its heading inside its collection circle, outlined gold while it signals.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.patches import Circle, Polygon, Rectangle

SEA = "#dcecf5"
PLASTIC = "#f28e2b"
VESSEL = "#1f4e79"
SIGNAL = "#e6b800"

__all__ = ["draw_frame"]


def draw_frame(ax: Axes, frame: dict[str, Any], title: str = "") -> None:
    """Draw one frame on `ax` (cleared first)."""
    ax.clear()
    size = float(frame["size"])
    ax.set_xlim(0, size)
    ax.set_ylim(0, size)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title, fontsize=9)
    ax.add_patch(Rectangle((0, 0), size, size, color=SEA, zorder=0))
    gx, gy = frame["current_grid"]
    flow = np.asarray(frame["current"])
    ax.quiver(gx, gy, flow[..., 0], flow[..., 1], color="#8fa9b8", zorder=1, width=0.003)
    plastic = np.asarray(frame["plastic"]).reshape(-1, 2)
    if len(plastic):
        ax.scatter(plastic[:, 0], plastic[:, 1], s=4, color=PLASTIC, zorder=2)
    for sx, sy in np.asarray(frame["sources"]):
        ax.add_patch(Rectangle((sx - 0.15, sy - 0.15), 0.3, 0.3, color="#8c564b", zorder=2))
    if frame.get("port") is not None:
        px, py = frame["port"]
        ax.add_patch(Circle((px, py), 0.4, color="#2ca02c", alpha=0.6, zorder=2))
    r = float(frame["collect_radius"])
    for (x, y), h, sig in zip(frame["pos"], frame["heading"], frame["signal"], strict=True):
        ax.add_patch(Circle((x, y), r, fill=False, ec=VESSEL, lw=0.5, alpha=0.5, zorder=3))
        tip = np.array([x, y]) + 0.45 * np.array([np.cos(h), np.sin(h)])
        left = np.array([x, y]) + 0.25 * np.array([np.cos(h + 2.5), np.sin(h + 2.5)])
        right = np.array([x, y]) + 0.25 * np.array([np.cos(h - 2.5), np.sin(h - 2.5)])
        edge = SIGNAL if sig else VESSEL  # outlined gold while it signals
        ax.add_patch(Polygon([tip, left, right], color=VESSEL, ec=edge, lw=1.5, zorder=4))
    caught = int(np.sum(frame["catch"]))
    label = f"collected {caught}, floating {len(plastic)}"
    box = {"fc": "white", "alpha": 0.7, "lw": 0}
    ax.text(0.02 * size, 0.98 * size, label, fontsize=7, va="top", zorder=5, bbox=box)
