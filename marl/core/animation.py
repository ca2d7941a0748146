"""GIFs from frames, drawn with matplotlib's Agg canvas (no display): every family viewer and
`marl.run.saved.render` write through `write_gif`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def write_gif(
    frames: Sequence[Any],
    path: str | Path,
    draw: Callable[[Any, Any, str], None],
    *,
    fps: int = 10,
    titles: Sequence[str] | None = None,
    dpi: int = 80,
) -> Path:
    """Animate `frames` into a GIF at `path`; `draw(ax, frame, title)` paints one frame on a
    4 x 4 inch axes (and clears what it drew before). Every family viewer writes through it."""
    from matplotlib.animation import PillowWriter
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if not frames:
        raise ValueError("no frames to draw")
    path = Path(path)
    fig = Figure(figsize=(4, 4))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    writer = PillowWriter(fps=fps)
    with writer.saving(fig, str(path), dpi):
        for k, frame in enumerate(frames):
            draw(ax, frame, titles[k] if titles else "")
            writer.grab_frame()
    return path
