"""Libraries' INFO logs stay off the console (orbax's checkpoint lines through absl, which
Hydra's job logging prints), unless asked for; a missing launcher names the `cluster` extra."""

from __future__ import annotations

import io
import logging
import re
import subprocess
import sys

import pytest
from tiny import TINY_IPPO

from marl import app, cli
from marl.learning import logs

TINY = TINY_IPPO  # the shared tiny run: its programs are compiled once per test run
LIBRARY_INFO = re.compile(r"\[(absl|orbax[\w.]*)\]\[INFO\]|^I\d{4} |orbax.*INFO|INFO.*orbax", re.M)


@pytest.mark.integration
def test_a_short_app_run_prints_no_library_info_lines(tmp_path):
    """`python -m marl.app` with checkpoints (orbax logs a dozen INFO lines per save): the
    console holds marl's own lines only."""
    cmd = [sys.executable, "-m", "marl.app", *TINY, f"out={tmp_path / 'runs'}", "name=quiet"]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    console = done.stdout + done.stderr
    assert done.returncode == 0, console[-3000:]
    assert "absolute return" in console  # it trained, checkpointed and finished
    assert not LIBRARY_INFO.search(console), LIBRARY_INFO.search(console).group(0)
    assert not [line for line in console.splitlines() if "[INFO]" in line]


@pytest.fixture
def info_console(monkeypatch):
    """The root logger at INFO printing to a buffer, as Hydra's job logging sets it up."""
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    root = logging.getLogger()
    monkeypatch.setattr(root, "level", logging.INFO)
    root.addHandler(handler)
    for name in logs.LIBRARY_LOGGERS:
        monkeypatch.setattr(logging.getLogger(name), "level", logging.NOTSET)
    yield buffer
    root.removeHandler(handler)


def test_library_info_lines_are_dropped_and_warnings_kept(info_console, monkeypatch):
    from absl import logging as absl_logging

    monkeypatch.delenv(logs.ENV_VAR, raising=False)
    assert logs.quiet_library_logs() == logging.WARNING
    absl_logging.info("orbax saved a checkpoint")
    logging.getLogger("orbax").info("orbax's own info")
    absl_logging.warning("orbax warns")
    assert info_console.getvalue().splitlines() == ["orbax warns"]


def test_the_environment_variable_brings_them_back(info_console, monkeypatch):
    from absl import logging as absl_logging

    monkeypatch.setenv(logs.ENV_VAR, "info")
    assert logs.quiet_library_logs() == logging.INFO
    absl_logging.info("orbax saved a checkpoint")
    assert "orbax saved a checkpoint" in info_console.getvalue()


def test_hydra_verbose_keeps_the_loggers_it_names(info_console, monkeypatch):
    monkeypatch.delenv(logs.ENV_VAR, raising=False)
    logs.quiet_library_logs(set(app._names(["absl"])))
    assert logging.getLogger("absl").level == logging.NOTSET
    assert logging.getLogger("orbax").level == logging.WARNING
    assert set(app._names(True)) == set(logs.LIBRARY_LOGGERS) and app._names(False) == []


def test_a_bad_level_is_one_line(monkeypatch, capsys):
    monkeypatch.setenv(logs.ENV_VAR, "loud")
    assert cli.main(["list", "--family", "particle"]) == 2
    err = capsys.readouterr().err.strip()
    assert "MARL_LIBRARY_LOGS='loud'" in err and "INFO" in err and "\n" not in err


@pytest.mark.parametrize("launcher", ["joblib", "submitit_slurm"])
def test_a_missing_launcher_names_the_cluster_extra(launcher, monkeypatch, capsys):
    monkeypatch.setattr(app, "_missing", lambda module: True)
    with pytest.raises(SystemExit) as e:
        app.check_launcher(["app", "--multirun", "algo=ippo", f"hydra/launcher={launcher}"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert 'pip install -e ".[cluster]"' in err and f"hydra/launcher={launcher}" in err
    assert "\n" not in err


def test_an_installed_launcher_passes(monkeypatch):
    monkeypatch.setattr(app, "_missing", lambda module: False)
    app.check_launcher(["app", "--multirun", "hydra/launcher=joblib"])
    app.check_launcher(["app", "algo=ippo"])  # no launcher named: nothing to check
