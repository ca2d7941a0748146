"""One writer per run folder: an OS lock (`fcntl.flock`) on `<run>/.lock`, held for the run's
life by the process that trains into it, released when it ends (by `FolderLock.release`, or by
the operating system when the process dies, however it dies). The file names its holder (pid,
host, since when), so a second writer (a second `resume=true`, a relaunched sweep's job) is
refused in one line naming the folder and the holder.

The lock file is removed on release; a claimant that locked a file another process removed
meanwhile tries again (it compares the inode it locked with the path's), so two claimants never
both hold the folder.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
from datetime import datetime
from pathlib import Path

LOCK = ".lock"


class FolderBusy(RuntimeError):
    """The run folder is held by another process: one line naming the folder and the holder."""


def holder(folder: Path) -> str:
    """Who holds `folder`'s lock, as its lock file says (`pid 812 on host n1 since ...`)."""
    try:
        fd = os.open(Path(folder) / LOCK, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            text = f.read(400).decode(errors="replace").strip()
    except OSError:
        text = ""
    return " ".join(text.split())[:200] or "a process that has not said who it is yet"


def busy(folder: Path) -> str:
    """The one line that refuses a second writer of `folder`."""
    return (
        f"{folder} is in use by another marl process ({holder(folder)}); one writer per run "
        "folder: wait for it to end, or choose another name="
    )


class FolderLock:
    """An exclusive lock on one run folder (`acquire` it, `release` it)."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.path = self.folder / LOCK
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """Whether this process holds it."""
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock without waiting (FolderBusy when another process holds it), then
        write who holds it."""
        while self._fd is None:
            try:  # never through a link: a `.lock` that points elsewhere is refused
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
            except OSError as e:
                if e.errno != errno.ELOOP:
                    raise
                raise OSError(
                    e.errno, f"{self.path} is a link; marl never writes through one (remove it)"
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                os.close(fd)
                if e.errno not in (errno.EWOULDBLOCK, errno.EACCES):
                    raise
                raise FolderBusy(busy(self.folder)) from None
            try:
                same = os.fstat(fd).st_ino == os.lstat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if not same:  # its holder removed the file as we locked it: lock the new one
                os.close(fd)
                continue
            self._fd = fd
        since = datetime.now().isoformat(timespec="seconds")
        note = f"pid {os.getpid()} on host {socket.gethostname()} since {since}\n".encode()
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, note, 0)

    def release(self) -> None:
        """Remove the lock file and let go (nothing when not held)."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()
        os.close(self._fd)  # closing the descriptor releases the flock
        self._fd = None


def locked_by_another(folder: Path) -> bool:
    """Whether another process holds `folder`'s lock now (a quick probe; nothing is kept)."""
    path = Path(folder) / LOCK
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def remove_stale_temporaries(folder: Path) -> list[Path]:
    """Delete the temporary files a killed writer left in `folder` (`.record.json.*.tmp`,
    what `marl.results.files.atomic_write` writes before its rename); call it holding the
    folder's lock. Returns what it removed."""
    removed = []
    for path in Path(folder).glob(".*.tmp"):
        if path.is_file():
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            removed.append(path)
    return removed
