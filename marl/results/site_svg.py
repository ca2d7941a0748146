"""Per-seed curves as inline SVG for the site's cell pages: a few kilobytes of text per cell,
no image files, drawn the same on every regeneration."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

import numpy as np

W, H = 520, 240  # view box
LEFT, RIGHT, TOP, BOTTOM = 58, 12, 12, 34  # margins for the axes' labels


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def seed_curves(
    steps: Sequence[Sequence[float]],
    values: Sequence[Sequence[float]],
    names: Sequence[str],
    ylabel: str,
) -> str:
    """One polyline per seed (`values[i]` at `steps[i]`), the mean over seeds in bold where
    every seed shares the steps; axes labelled with their ranges."""
    xs = [np.asarray(s, float) for s in steps]
    ys = [np.asarray(v, float) for v in values]
    finite = np.concatenate([y[np.isfinite(y)] for y in ys] or [np.zeros(1)])
    if finite.size == 0:
        finite = np.zeros(1)
    x_max = max(float(x.max()) for x in xs) if xs else 1.0
    y_min, y_max = float(finite.min()), float(finite.max())
    if y_max - y_min < 1e-12:
        y_min, y_max = y_min - 0.5, y_max + 0.5
    x_max = x_max or 1.0

    def point(x: float, y: float) -> str:
        px = LEFT + (W - LEFT - RIGHT) * x / x_max
        py = TOP + (H - TOP - BOTTOM) * (1 - (y - y_min) / (y_max - y_min))
        return f"{px:.1f},{py:.1f}"

    def line(x: np.ndarray, y: np.ndarray, cls: str, title: str) -> str:
        keep = np.isfinite(y)
        pts = " ".join(point(a, b) for a, b in zip(x[keep], y[keep], strict=True))
        return f'<polyline class="{cls}" points="{pts}"><title>{escape(title)}</title></polyline>'

    parts = [
        f'<svg class="seeds" viewBox="0 0 {W} {H}" role="img" aria-label="{escape(ylabel)} of '
        'each seed against env steps">',
        f'<line class="axis" x1="{LEFT}" y1="{H - BOTTOM}" x2="{W - RIGHT}" y2="{H - BOTTOM}"/>',
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{H - BOTTOM}"/>',
        f'<text x="{LEFT - 4}" y="{TOP + 10}" text-anchor="end">{_fmt(y_max)}</text>',
        f'<text x="{LEFT - 4}" y="{H - BOTTOM}" text-anchor="end">{_fmt(y_min)}</text>',
        f'<text x="{LEFT}" y="{H - 8}">0</text>',
        f'<text x="{W - RIGHT}" y="{H - 8}" text-anchor="end">{x_max:,.0f} env steps</text>',
        f'<text x="12" y="{(H - BOTTOM + TOP) / 2:.0f}" transform="rotate(-90 12 '
        f'{(H - BOTTOM + TOP) / 2:.0f})" text-anchor="middle">{escape(ylabel)}</text>',
    ]
    parts += [line(x, y, "seed", name) for x, y, name in zip(xs, ys, names, strict=True)]
    if len(ys) > 1 and all(x.shape == xs[0].shape and np.array_equal(x, xs[0]) for x in xs):
        parts.append(line(xs[0], np.mean(np.stack(ys), axis=0), "mean", "mean over seeds"))
    parts.append("</svg>")
    return "\n".join(parts)


__all__ = ["seed_curves"]
