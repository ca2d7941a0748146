"""The commit-msg hook in .githooks (enabled with `git config core.hooksPath .githooks`):
a subject of at most 72 characters, a blank line and a body; merges, reverts and fixups pass."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HOOK = Path(__file__).resolve().parents[1] / ".githooks" / "commit-msg"


def hook(message: str, tmp_path: Path) -> subprocess.CompletedProcess:
    path = tmp_path / "COMMIT_EDITMSG"
    path.write_text(message)
    return subprocess.run(
        [sys.executable, str(HOOK), str(path)], capture_output=True, text=True, timeout=60
    )


GOOD = "Grid: agents see their neighbours\n\nThe radius limits what each one sees.\n"


def test_the_hook_accepts_a_short_subject_and_a_body(tmp_path):
    assert hook(GOOD, tmp_path).returncode == 0
    comments = "# Please enter the commit message\n" + GOOD + "# ---\n"
    assert hook(comments, tmp_path).returncode == 0


@pytest.mark.parametrize(
    "message,why",
    [
        ("x" * 73 + "\n\nA body.\n", "73 characters"),
        ("Grid: agents see their neighbours\n", "blank line"),
        ("Grid: agents see their neighbours\nNo blank line.\n", "blank line"),
        ("Grid: agents see their neighbours\n\n\n# only a comment\n", "body"),
        ("# nothing but comments\n", "empty"),
    ],
)
def test_the_hook_refuses(message, why, tmp_path):
    done = hook(message, tmp_path)
    assert done.returncode == 1
    assert why in done.stderr


@pytest.mark.parametrize(
    "subject",
    ["Merge branch 'x' into main", 'Revert "Grid: a long subject"', "fixup! " + "y" * 80],
)
def test_the_hook_lets_merges_reverts_and_fixups_through(subject, tmp_path):
    assert hook(subject + "\n", tmp_path).returncode == 0


def test_the_hook_is_executable():
    assert HOOK.stat().st_mode & 0o111


def test_git_runs_the_hook_from_core_hooks_path(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t")
    env["GIT_COMMITTER_EMAIL"] = "t@t"

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["git", "-c", f"core.hooksPath={HOOK.parent}", *args],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    git("init", "-q")
    (tmp_path / "f").write_text("1")
    git("add", "f")
    refused = git("commit", "-q", "-m", "z" * 80, "-m", "A body.")
    assert refused.returncode != 0 and "at most 72" in refused.stderr
    assert git("commit", "-q", "-m", "A subject", "-m", "A body.").returncode == 0
