"""Ranks the evidence allows: learners the data do not separate share a rank.

The rule (stated on the site and in the leaderboard guide as `RULE`): learners are listed by
the ranked statistic's point estimate (ties by name). Going down the list, a learner shares the
rank of the learner above it unless its 95% interval lies wholly below (in the statistic's
direction) the interval of the first learner holding that rank; then it opens a new rank, its
position in the list (competition ranking: 1, 1, 3). Where probabilities of improvement are
known (a group's table), no learner ranks strictly above one that the probability says beats
it (CI wholly above 0.5): the ranks between the two are merged.

Properties: ranks never fall as the point estimate rises (the listed order is the ranking);
two learners whose intervals overlap, with no third between them, share a rank; identical
records give identical intervals (one bootstrap seed for every learner), hence one rank.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

RULE = (
    "Learners are listed by the ranked statistic; each shares the rank of the learner above "
    "it unless its 95% interval lies wholly below the interval of the first learner holding "
    "that rank, where it opens a new rank at its position (1, 1, 3). In a group's table no "
    "learner ranks above one whose probability of improvement over it has a 95% interval "
    "wholly above 0.5. A shared rank says the data do not separate the learners; the listed "
    "order inside it is the point estimates'."
)


def shared_ranks(
    intervals: Mapping[str, Mapping[str, float]],
    *,
    lower_is_better: bool = False,
    beats: Callable[[str, str], bool] | None = None,
) -> list[tuple[str, int]]:
    """[(learner, rank)] in listed order, from `intervals` (learner -> {point, low, high}).

    `beats(a, b)`: True where a's improvement over b is significant (probability of
    improvement with a 95% CI wholly above 0.5); such a pair never has b ranked above a.
    """
    sign = 1.0 if lower_is_better else -1.0
    order = sorted(intervals, key=lambda a: (sign * intervals[a]["point"], a))

    def below(x: str, leader: str) -> bool:  # x's interval wholly on the worse side of leader's
        if lower_is_better:
            return intervals[x]["low"] > intervals[leader]["high"]
        return intervals[x]["high"] < intervals[leader]["low"]

    tier = [0] * len(order)
    leader = 0
    for i in range(1, len(order)):
        if below(order[i], order[leader]):
            leader = i
        tier[i] = leader
    if beats is not None:
        changed = True
        while changed:
            changed = False
            pairs = [(a, b) for a in range(len(order)) for b in range(a + 1, len(order))]
            for a, b in pairs:
                if tier[a] != tier[b] and beats(order[b], order[a]):  # b listed below, beats a
                    first, last = tier[a], tier[b]
                    tier = [first if first <= t <= last else t for t in tier]
                    changed = True
    return [(a, tier[i] + 1) for i, a in enumerate(order)]


def significant(improvement: Mapping[str, Mapping[str, float]]) -> Callable[[str, str], bool]:
    """`beats` from a group's `improvement` table ("a > b" -> {point, low, high})."""

    def beats(a: str, b: str) -> bool:
        iv = improvement.get(f"{a} > {b}")
        return iv is not None and iv["low"] > 0.5

    return beats


def separated_pairs(ranked: Sequence[tuple[str, int]]) -> int:
    """How many adjacent pairs of a ranking hold different ranks."""
    return sum(r1 != r2 for (_, r1), (_, r2) in zip(ranked, ranked[1:], strict=False))


__all__ = ["RULE", "separated_pairs", "shared_ranks", "significant"]
