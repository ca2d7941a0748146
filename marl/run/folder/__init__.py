"""The run folder, one concept: which folder a run writes (`claim`, `relaunch`; `claiming`), the
OS lock of its one writer (`FolderLock`; `lock`), and its writing, from the first files to the
last (`RunDir`; `writer`, which also lays out the files a folder holds).
"""

from marl.run.folder.claiming import (
    claim,
    config_differences,
    finished_run,
    relaunch,
    unfinished_run,
)
from marl.run.folder.lock import LOCK, FolderLock
from marl.run.folder.writer import CHECKPOINT, RunDir

__all__ = [
    "CHECKPOINT",
    "LOCK",
    "FolderLock",
    "RunDir",
    "claim",
    "config_differences",
    "finished_run",
    "relaunch",
    "unfinished_run",
]
