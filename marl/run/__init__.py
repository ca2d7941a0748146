"""Running jobs, in rooms: `train` (the run itself: `marl train`'s config composed, checked and
resolved, the learner built once, trained into its folder), `folder` (the run folder: claimed,
locked, written), `campaigns` (many runs: sweeps, scheduler jobs, the versioned benchmark, runs
split into parts), `saved` (saved runs and what reads them: evaluation, cross-play, rendering,
compaction, reports' studies) and `processes` (multi-host runs and their supervisor). `errors`
holds the one-line errors every room raises.
"""
