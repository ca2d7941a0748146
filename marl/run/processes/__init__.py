"""Processes: a multi-host run's settings, join and watchdog (`runtime`), and the supervisor that
runs its work in a child process and turns JAX's aborts into one line (`supervisor`).
"""
