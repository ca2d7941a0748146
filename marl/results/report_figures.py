"""A report's figures: aggregates, performance profiles, probabilities of improvement and
sample efficiency per group of comparable tasks, a learning curve per task (`write_figures`),
their titles, and the removal of figures an earlier writing left (`prune_figures`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from marl.results import plots, stats
from marl.results.report_numbers import family_of
from marl.results.study import Study, comparable_groups, subset


def write_figures(study: Study, out: Path, reps: int, seed: int) -> dict[str, Path]:
    """Draw every figure of a report into `out`; name -> path."""
    fig_dir = out / "figures"
    colors = plots.algorithm_colors(study.algorithms)
    figs: dict[str, Path] = {}
    scores = study.normalised_scores()
    curves_by_algo = study.normalised_curves()
    for g in comparable_groups(scores):
        sub = subset(scores, g)
        tag = g.slug
        across = len({family_of(t) for t in g.tasks}) > 1
        if across:  # families weighted equally; profiles and curves would pool them: none
            agg = stats.family_aggregate(sub, family_of, reps=reps, seed=seed)
        else:
            agg = stats.aggregate(sub, reps=reps, seed=seed)
        figs[f"aggregates/{tag}"] = plots.aggregate_intervals(
            agg, fig_dir / f"aggregates_{tag}.png", colors=colors
        )
        if across:
            if len(sub) > 1:
                pairs = stats.pairwise_improvement(sub, reps=reps, seed=seed)
                figs[f"improvement/{tag}"] = plots.improvement_probabilities(
                    pairs, fig_dir / f"improvement_{tag}.png", colors=colors
                )
            continue
        everything = np.concatenate([v for by in sub.values() for v in by.values()])
        taus = np.linspace(min(0.0, everything.min()), max(1.0, everything.max()), 101)
        profiles = {}
        for algo, by in sub.items():
            frac, low, high = stats.performance_profile(
                [by[t] for t in sorted(by)], taus, reps=reps, seed=seed
            )
            profiles[algo] = (taus, frac, low, high)
        figs[f"profiles/{tag}"] = plots.performance_profiles(
            profiles, fig_dir / f"performance_profiles_{tag}.png", colors=colors
        )
        if len(sub) > 1:
            pairs = stats.pairwise_improvement(sub, reps=reps, seed=seed)
            figs[f"improvement/{tag}"] = plots.improvement_probabilities(
                pairs, fig_dir / f"improvement_{tag}.png", colors=colors
            )
        curves = {}
        for algo, by in subset(curves_by_algo, g).items():
            try:
                curves[algo] = stats.sample_efficiency(by, reps=reps, seed=seed)
            except ValueError:  # tasks with different evaluation counts: no pooled curve
                continue
        labels = {c.xlabel for c in curves.values()}
        if curves and len(labels) == 1:
            figs[f"sample_efficiency/{tag}"] = plots.sample_efficiency_curves(
                curves, fig_dir / f"sample_efficiency_{tag}.png", colors=colors
            )
    for task in study.tasks:
        score = study.scoring.get(task)
        unit = score.metric if score is not None and score.kind == "natural" else study.metric
        per_algo = {}
        for algo in study.algorithms:
            entry = study.entries.get((task, algo))
            if entry is not None:
                steps, values = entry.curve(unit)
                per_algo[algo] = stats.mean_curve(steps, values, reps=reps, seed=seed)
        name = "task_" + task.replace("/", "_")
        figs[name] = plots.task_curves(
            per_algo,
            fig_dir / f"{name}.png",
            title=f"{task}: greedy evaluation (mean over runs, 95% CI)",
            ylabel=unit.replace("_", " "),
            colors=colors,
        )
    return figs


FIGURE_TITLES = {
    "aggregates": "Aggregate scores (absolute metric, 95% stratified bootstrap CIs)",
    "profiles": "Performance profiles",
    "improvement": "Probability of improvement",
    "sample_efficiency": "Sample efficiency (IQM of the score over runs and tasks)",
}


def prune_figures(fig_dir: Path, figs: dict[str, Path]) -> None:
    """Remove the figures an earlier writing of marl's drew in `fig_dir` and this one did not
    (tasks or groups it no longer has); a file marl did not write stays
    (`marl.results.written`)."""
    from marl.results.written import prune

    prune(fig_dir, figs.values())
