"""The evaluation protocol's outputs: run records, statistics, plots, reports and the
leaderboard. These modules read records; they never train.
"""
