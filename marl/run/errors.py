"""The error a user can fix: an unknown value on the command line, a run directory to resume
or to rename, a sweep that cannot run as asked; `marl` prints it as one line, exit code 2."""


class UsageError(Exception):
    """A mistake a user can fix; printed as one line, exit code 2."""
