"""Libraries' INFO logs kept off the console where marl starts a job (its CLI, `python -m
marl.app`), never on `import marl`.

orbax-checkpoint logs every save through absl at INFO (a dozen lines per segment), which
Hydra's job logging (root logger at INFO) prints: 430 of a short sweep's 462 console lines.
`quiet_library_logs()` sets those libraries' loggers to WARNING, so warnings and errors still
show. Set `MARL_LIBRARY_LOGS=INFO` (or any level name: DEBUG, WARNING, ...) to choose their
level yourself; under `python -m marl.app`, `hydra.verbose=absl` (or `true`) keeps Hydra's.
"""

from __future__ import annotations

import logging
import os

LIBRARY_LOGGERS = ("absl", "orbax")  # orbax logs through absl; its own logger for the rest
ENV_VAR = "MARL_LIBRARY_LOGS"
DEFAULT_LEVEL = logging.WARNING


def library_log_level() -> int:
    """The level for the libraries' loggers: `MARL_LIBRARY_LOGS` (a level name or number),
    else WARNING; an unknown name raises ValueError naming the valid ones."""
    text = os.environ.get(ENV_VAR, "").strip()
    if not text:
        return DEFAULT_LEVEL
    if text.isdigit():
        return int(text)
    level = logging.getLevelName(text.upper())
    if not isinstance(level, int):
        valid = "DEBUG, INFO, WARNING, ERROR, CRITICAL"
        raise ValueError(f"{ENV_VAR}={text!r} is not a log level; valid: {valid}")
    return level


def quiet_library_logs(keep: frozenset[str] | set[str] = frozenset()) -> int:
    """Set the loggers of `LIBRARY_LOGGERS` (but those named in `keep`) to
    `library_log_level()`; returns the level."""
    level = library_log_level()
    for name in LIBRARY_LOGGERS:
        if name not in keep:
            logging.getLogger(name).setLevel(level)
    return level
