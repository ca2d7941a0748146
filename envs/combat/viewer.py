"""Draw combat battles with matplotlib (Agg, no display needed) and save them as GIFs.

A frame is `Combat.render_frame(state)`: `pos` [U, 2], `radius` [U], `team` [U] (0 allies,
1 enemies), `health` [U] (fraction), `alive` [U], `target` [U] (attacked unit or -1) and
`map_size`. Units are circles of their collision radius coloured by team, with a health bar
above each living unit; a line joins each attacker to its target; dead units are faded crosses.
The view is the square part of the map [0, map_size]^2 that holds every unit of every frame
(with a margin), so small battles are not lost on a large map.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.patches import Circle, Rectangle

from marl.core.animation import write_gif

TEAM_COLOURS = ("#1f77b4", "#d62728")  # allies, enemies
TEAM_NAMES = ("allies", "enemies")
MAP_COLOUR = "#f4f1e8"
DEAD_ALPHA = 0.25
BAR_WIDTH = 1.2  # health bar length in map units (scaled up for big units)
BAR_HEIGHT = 0.25
MARGIN = 3.0  # map units around the units' extent
MIN_VIEW = 12.0  # the smallest side of the view

__all__ = ["draw_frame", "save_gif", "view_box"]


def view_box(frames: Sequence[dict[str, Any]]) -> tuple[float, float, float]:
    """(x0, y0, side) of a square view inside the map holding every unit of every frame."""
    size = float(frames[0]["map_size"])
    pos = np.concatenate([np.asarray(f["pos"]) for f in frames])
    low, high = pos.min(axis=0) - MARGIN, pos.max(axis=0) + MARGIN
    side = min(max(float(np.max(high - low)), MIN_VIEW), size)
    centre = (low + high) / 2
    x0, y0 = np.clip(centre - side / 2, 0.0, size - side)
    return float(x0), float(y0), side


def draw_frame(
    ax: Axes, frame: dict[str, Any], title: str = "", box: tuple[float, float, float] | None = None
) -> None:
    """Draw one frame on `ax` (cleared first), viewing `box` (default: `view_box([frame])`)."""
    ax.clear()
    size = float(frame["map_size"])
    x0, y0, side = view_box([frame]) if box is None else box
    margin = 0.02 * side
    ax.set_xlim(x0 - margin, x0 + side + margin)
    ax.set_ylim(y0 - margin, y0 + side + margin)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title, fontsize=9)
    ax.add_patch(Rectangle((0, 0), size, size, color=MAP_COLOUR, zorder=0))
    pos = np.asarray(frame["pos"])
    radius = np.asarray(frame["radius"])
    team = np.asarray(frame["team"])
    health = np.clip(np.asarray(frame["health"]), 0.0, 1.0)
    alive = np.asarray(frame["alive"], bool)
    target = np.asarray(frame.get("target", np.full(len(pos), -1)))
    for u in np.flatnonzero(target >= 0).tolist():
        if alive[u]:
            xs, ys = zip(pos[u], pos[target[u]], strict=True)
            ax.plot(xs, ys, color=TEAM_COLOURS[team[u]], lw=0.8, alpha=0.7, zorder=1)
    for u in range(len(pos)):
        colour = TEAM_COLOURS[team[u]]
        if not alive[u]:
            ax.plot(*pos[u], marker="x", color=colour, alpha=DEAD_ALPHA, ms=4, zorder=2)
            continue
        ax.add_patch(Circle(pos[u], radius[u], color=colour, alpha=0.85, zorder=3))
        width = max(BAR_WIDTH, 2 * radius[u])
        corner = pos[u] + np.array([-width / 2, radius[u] + 0.2])
        ax.add_patch(Rectangle(corner, width, BAR_HEIGHT, color="#555555", zorder=4))
        ax.add_patch(Rectangle(corner, width * health[u], BAR_HEIGHT, color="#2ca02c", zorder=5))
    counts = [int(np.sum(alive & (team == k))) for k in range(2)]
    label = "  ".join(f"{TEAM_NAMES[k]}: {counts[k]}" for k in range(2))
    ax.text(x0 + margin, y0 + side - margin, label, fontsize=7, va="top", zorder=6)


def save_gif(
    frames: Sequence[dict[str, Any]],
    path: str | Path,
    *,
    fps: int = 10,
    titles: Sequence[str] | None = None,
    dpi: int = 80,
) -> Path:
    """Write `frames` as an animated GIF at `path`; returns the path."""
    if not frames:
        raise ValueError("no frames to draw")
    box = view_box(frames)
    return write_gif(
        frames, path, lambda ax, f, t: draw_frame(ax, f, t, box), fps=fps, titles=titles, dpi=dpi
    )
