"""The errors a user can fix: an unknown value on the command line, a run directory to resume
or to rename, a sweep that cannot run as asked (`UsageError`), a mistake in a run's config
(`ConfigError`); `marl` prints each as one line, exit code 2."""


class UsageError(Exception):
    """A mistake a user can fix; printed as one line, exit code 2."""


class ConfigError(ValueError):
    """A mistake in the run config; the message is one line naming the valid choices."""
