"""The CPU-safety XLA flag: set where marl starts a job, never by `import marl`."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import pytest

from marl.learning import xla

FLAG = xla.SAFE_CPU_FLAG


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", xla.OPT_OUT)}
    return {**env, **extra}


def _run(code: str, **extra: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code], env=_env(**extra), capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip()


@pytest.mark.integration
def test_import_marl_leaves_xla_flags_alone():
    code = "import os, marl; marl.make('particle/simple'); print(os.environ.get('XLA_FLAGS', ''))"
    assert _run(code) == ""


@pytest.mark.integration
def test_the_cli_sets_the_flag():
    code = "import os; from marl import cli; cli.main(['list', '--family', 'particle']); " + (
        "print(os.environ['XLA_FLAGS'])"
    )
    assert _run(code).endswith(FLAG)


def test_configure_keeps_a_users_choice(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=true --other")
    monkeypatch.delenv(xla.OPT_OUT, raising=False)
    assert xla.configure_xla() is False
    assert os.environ["XLA_FLAGS"] == "--xla_cpu_multi_thread_eigen=true --other"
    monkeypatch.setenv(xla.OPT_OUT, "1")
    monkeypatch.setenv("XLA_FLAGS", "--other")
    assert xla.configure_xla() is False and os.environ["XLA_FLAGS"] == "--other"
    monkeypatch.delenv(xla.OPT_OUT)
    assert xla.configure_xla() is True
    assert os.environ["XLA_FLAGS"] == f"--other {FLAG}"


def test_the_runner_warns_once_without_the_flag(monkeypatch):
    monkeypatch.setattr(xla, "_warned", False)
    monkeypatch.setenv("XLA_FLAGS", "")
    monkeypatch.delenv(xla.OPT_OUT, raising=False)
    with pytest.warns(xla.CPUThreadingWarning, match="configure_xla"):
        xla.warn_if_unsafe()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xla.warn_if_unsafe()  # once per process
        monkeypatch.setattr(xla, "_warned", False)
        monkeypatch.setenv("XLA_FLAGS", FLAG)
        xla.warn_if_unsafe()  # in force: silent


def test_the_tests_compile_cache_is_pruned_oldest_first(tmp_path):
    """tests/conftest.py keeps the persistent XLA cache under its cap by deleting the oldest
    entries down to 3/4 of it; a cache under the cap is left alone."""
    from conftest import prune_cache

    for i in range(8):  # 100 bytes each, entry 0 the oldest
        path = tmp_path / f"entry{i}-cache"
        path.write_bytes(b"x" * 100)
        os.utime(path, (1000 + i, 1000 + i))
    (tmp_path / "notes.txt").write_bytes(b"y" * 1000)  # not JAX's: never counted nor deleted
    os.utime(tmp_path / "notes.txt", (1, 1))
    assert prune_cache(str(tmp_path), cap=800) == 0 and len(list(tmp_path.iterdir())) == 9
    assert prune_cache(str(tmp_path), cap=400) == 500  # down to 300 <= 3/4 of 400
    kept = [f"entry{i}-cache" for i in (5, 6, 7)] + ["notes.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == kept
