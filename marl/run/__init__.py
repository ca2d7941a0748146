"""Running jobs: config composition and checks, run directories, loggers, process settings,
transfer evaluation, saved runs, rendering, and the versioned benchmark.
"""
