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


def test_import_marl_leaves_xla_flags_alone():
    code = "import os, marl; marl.make('particle/simple'); print(os.environ.get('XLA_FLAGS', ''))"
    assert _run(code) == ""


def test_the_cli_sets_the_flag():
    code = "import os; from marl import cli; cli.main(['list', '--family', 'particle']); " + (
        "print(os.environ['XLA_FLAGS'])"
    )
    assert FLAG in _run(code).split()


def test_configure_keeps_a_users_choice(monkeypatch):
    monkeypatch.setattr(xla, "_jaxlib_release", lambda: (0, 4))  # a release without YNNPACK
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


@pytest.mark.parametrize("release", [None, (0, 4), (0, 11), (1, 10)])
def test_the_ynn_flag_is_set_only_on_the_releases_measured(monkeypatch, release):
    """XLA aborts on a flag it does not know: other jaxlib releases get only the safety flag."""
    monkeypatch.delenv(xla.OPT_OUT, raising=False)
    monkeypatch.setenv("XLA_FLAGS", "--other")
    monkeypatch.setattr(xla, "_jaxlib_release", lambda: release)
    assert xla.configure_xla() is True
    assert os.environ["XLA_FLAGS"] == f"--other {FLAG}"


def test_the_ynn_flag_on_a_measured_release_unless_the_user_set_one(monkeypatch):
    monkeypatch.delenv(xla.OPT_OUT, raising=False)
    monkeypatch.setattr(xla, "_jaxlib_release", lambda: xla.YNN_RELEASES[0])
    monkeypatch.setenv("XLA_FLAGS", "--other")
    assert xla.configure_xla() is True
    assert os.environ["XLA_FLAGS"] == f"--other {FLAG} {xla.YNN_FLAG}"
    mine = "--xla_cpu_experimental_ynn_fusion_type=dot,eltwise,reduce"
    monkeypatch.setenv("XLA_FLAGS", mine)
    assert xla.configure_xla() is True
    assert os.environ["XLA_FLAGS"] == f"{mine} {FLAG}"


def test_the_installed_jaxlib_accepts_the_flags_it_is_given():
    """The flags `configure_xla` sets here start a backend (XLA aborts on an unknown flag)."""
    code = (
        "from marl.learning.xla import configure_xla; configure_xla(); import jax, os; "
        "print(float(jax.numpy.ones(3).sum()), os.environ['XLA_FLAGS'])"
    )
    out = _run(code)
    assert out.startswith("3.0") and FLAG in out.split()


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
