"""Campaigns of many runs: `marl sweep` (`sweep`), runs as scheduler jobs (`launch`,
`launch_options`, `launch_records`), the versioned benchmark (`benchmark` and its `_costs`,
`_runs`, `_notes`; `verify`; `entrants`, a learner of one's own on its cells), and runs split
into parts of their seeds, joined again (`parts`).
"""
