"""Draw particle worlds with matplotlib (Agg, no display needed) and save them as GIFs.

A frame is `ParticleEnv.render_frame(state)`: `pos` [E, 2], `size` [E], `num_agents` N and
`agent_group` [N]. Agents are coloured by group, landmarks are grey, unless the frame carries an
optional `colour` [E, 3] (RGB in [0, 1]); circles have the entities' radii. The view is the arena
[-1.2, 1.2]^2, widened to fit every frame if something leaves it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.patches import Circle

from marl.core.animation import write_gif

ARENA = 1.2
GROUP_COLOURS = ("#d95f02", "#1b9e77", "#7570b3", "#e7298a", "#66a61e", "#e6ab02")
LANDMARK_COLOUR = "#8c8c8c"

__all__ = ["bounds", "draw_frame", "save_gif"]


def bounds(frames: Sequence[dict[str, Any]]) -> float:
    """Half-width of a square view centred on 0 that holds every entity of every frame."""
    extent = ARENA
    for f in frames:
        pos = np.asarray(f["pos"])
        size = np.asarray(f["size"])
        reach = np.abs(pos) + size[:, None]
        finite = reach[np.isfinite(reach)]
        if finite.size:
            extent = max(extent, float(finite.max()) * 1.05)
    return extent


def draw_frame(ax: Axes, frame: dict[str, Any], title: str = "", half_width: float = ARENA) -> None:
    """Draw one frame on `ax` (cleared first): the viewer contract's `(ax, frame, title)`,
    the arena's `half_width` after it."""
    ax.clear()
    ax.set_xlim(-half_width, half_width)
    ax.set_ylim(-half_width, half_width)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title, fontsize=9)
    pos = np.asarray(frame["pos"])
    size = np.asarray(frame["size"])
    n = int(frame["num_agents"])
    groups = np.asarray(frame.get("agent_group", np.zeros(n, int)))
    colours = frame.get("colour")
    # landmarks first, so agents are drawn on top
    for e in range(n, len(pos)):
        colour = LANDMARK_COLOUR if colours is None else np.clip(colours[e], 0, 1)
        ax.add_patch(Circle(pos[e], size[e], color=colour, alpha=0.8, zorder=1))
    for i in range(n):
        colour = GROUP_COLOURS[int(groups[i]) % len(GROUP_COLOURS)]
        if colours is not None:
            colour = np.clip(colours[i], 0, 1)
        ax.add_patch(Circle(pos[i], size[i], color=colour, alpha=0.85, zorder=2))
        ax.annotate(str(i), pos[i], ha="center", va="center", fontsize=7, zorder=3)


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
    half_width = bounds(frames)
    return write_gif(
        frames,
        path,
        lambda ax, f, t: draw_frame(ax, f, t, half_width),
        fps=fps,
        titles=titles,
        dpi=dpi,
    )
