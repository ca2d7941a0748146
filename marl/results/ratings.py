"""Ratings from head-to-head scores: a Bradley-Terry fit on the Elo scale, with bootstrap
intervals over each player's seeds, and the score matrix with the same intervals.

Scores are per game from one player's side (1 a win, 0.5 a draw, 0 a loss), kept per pair of
seeds: `scores[(i, j)]` is `[seeds_i, seeds_j]`, player i's mean score over the games (both
sides, every episode) its seed s played against player j's seed t. A bootstrap replicate
draws each player's seeds with replacement (the seeds are the independent runs), as rliable
resamples runs.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

ELO = 400.0 / np.log(10.0)  # natural log-odds to Elo points
PRIOR_GAMES = 1.0  # virtual drawn games per pair: keeps an unbeaten player's rating finite


def bradley_terry(score: np.ndarray, games: np.ndarray, prior: float = PRIOR_GAMES) -> np.ndarray:
    """Ratings r in Elo points, mean 0, with P(i beats j) = 1 / (1 + 10^((r_j - r_i) / 400)).

    `score[i, j]`: i's summed score over its `games[i, j]` games against j (draws count a
    half); `prior` drawn games are added to every pair that met. The maximum-likelihood fit by
    Newton's method on the (concave) log-likelihood, each step halved until it does not lower
    the likelihood; the ratings of players no path of games connects are not comparable.
    """
    met = games > 0
    n_ij = games + prior * met
    w_ij = score + 0.5 * prior * met
    wins = w_ij.sum(axis=1)

    def loglik(r: np.ndarray) -> float:
        d = r[:, None] - r[None, :]
        return float(np.sum(w_ij * -np.logaddexp(0.0, -d)))

    r = np.zeros(len(score))
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(r[:, None] - r[None, :])))
        grad = wins - np.sum(n_ij * p, axis=1)
        h = n_ij * p * (1.0 - p)
        info = np.diag(h.sum(axis=1)) - h  # minus the Hessian: a graph Laplacian
        step = np.linalg.lstsq(info, grad, rcond=None)[0]
        base, scale = loglik(r), 1.0
        while scale > 1e-6 and loglik(r + scale * step) < base - 1e-12:
            scale /= 2
        r = r + scale * step
        if np.max(np.abs(scale * step)) < 1e-10:
            break
    return ELO * (r - r.mean())


def _totals(
    scores: Mapping[tuple[int, int], np.ndarray],
    n: int,
    games: int,
    picks: list[np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(summed score [n, n], game counts [n, n]) over the pairs, `games` games per pair of
    seeds; `picks`: each player's resampled seed indices."""
    score, count = np.zeros((n, n)), np.zeros((n, n))
    for (i, j), s in scores.items():
        if picks is not None:
            s = s[np.ix_(picks[i], picks[j])]
        score[i, j] += games * s.sum()
        score[j, i] += games * (1.0 - s).sum()
        count[i, j] += games * s.size
        count[j, i] += games * s.size
    return score, count


def crossplay_table(
    scores: Mapping[tuple[int, int], np.ndarray],
    seeds: list[int],
    games: int = 1,
    reps: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, np.ndarray]:
    """Ratings and the score matrix, each with a percentile bootstrap interval.

    `scores[(i, j)]` ([seeds_i, seeds_j], i < j): mean scores over `games` games per pair of
    seeds; `seeds[i]`: player i's seed count. Returns elo / elo_low / elo_high [n] and
    matrix / matrix_low / matrix_high [n, n] (row i's mean score against column j; NaN where
    they did not meet).
    """
    n = len(seeds)
    rng = np.random.default_rng(seed)

    def matrix(picks: list[np.ndarray] | None) -> np.ndarray:
        out = np.full((n, n), np.nan)
        for (i, j), s in scores.items():
            if picks is not None:
                s = s[np.ix_(picks[i], picks[j])]
            out[i, j] = s.mean()
            out[j, i] = 1.0 - s.mean()
        return out

    def ratings(picks: list[np.ndarray] | None) -> np.ndarray:
        return bradley_terry(*_totals(scores, n, games, picks))

    point_r, point_m = ratings(None), matrix(None)
    boot_r, boot_m = [], []
    for _ in range(reps):
        picks = [rng.integers(0, k, size=k) for k in seeds]
        boot_r.append(ratings(picks))
        boot_m.append(matrix(picks))
    lo, hi = 100 * (1 - level) / 2, 100 * (1 + level) / 2
    return {
        "elo": point_r,
        "elo_low": np.percentile(boot_r, lo, axis=0),
        "elo_high": np.percentile(boot_r, hi, axis=0),
        "matrix": point_m,
        "matrix_low": np.percentile(boot_m, lo, axis=0),
        "matrix_high": np.percentile(boot_m, hi, axis=0),
    }
