"""`distributed=true` on one machine: two processes stand in for two hosts (JAX's CPU
collectives), and a coordinator that never answers fails in one line."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

from marl import cli

ARGS = [
    "env=particle/simple",
    "algo=ippo",
    "seeds=2",
    "budget=4096",
    "protocol.num_evaluations=2",
    "protocol.eval_episodes=4",
    "protocol.absolute_episodes=8",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(port: int, process: int, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        JAX_COORDINATOR_ADDRESS=f"127.0.0.1:{port}",
        JAX_NUM_PROCESSES="2",
        JAX_PROCESS_ID=str(process),
        JAX_PLATFORMS="cpu",
        **extra,
    )
    return env


def _train(args, env):
    cmd = [sys.executable, "-m", "marl.cli", "train", *args]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _returns(path):
    runs = json.loads((path / "record.json").read_text())["particle"]["simple"]["ippo"]
    return {
        (run, step): np.mean(v["episode_return"])
        for run, steps in runs.items()
        for step, v in steps.items()
        if "episode_return" in v
    }


@pytest.mark.integration
@pytest.mark.slow
def test_two_processes_train_one_run_that_host_0_alone_writes(tmp_path):
    """Host 1 runs `marl train`, host 0 the Hydra entry point (`python -m marl.app`): both
    join before anything else, and the run equals the one-process run."""
    port = _free_port()
    args = [*ARGS, "distributed=true", "name=mh", f"out={tmp_path}"]
    app = [sys.executable, "-m", "marl.app", *args, f"hydra.run.dir={tmp_path / 'hydra'}"]
    procs = [
        _train(args, _env(port, 1)),
        subprocess.Popen(
            app, env=_env(port, 0), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        ),
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err[-2000:]
    assert [p.name for p in (tmp_path / "particle/simple/ippo").iterdir()] == ["mh"]
    assert "wrote" in outs[1][0] and "wrote" not in outs[0][0]  # host 0 writes, host 1 computes
    code = cli.main(["train", *ARGS, "name=single", f"out={tmp_path / 'one'}"])
    assert code == 0
    got = _returns(tmp_path / "particle/simple/ippo/mh")
    want = _returns(tmp_path / "one/particle/simple/ippo/single")
    assert got.keys() == want.keys()
    for key in want:  # seeds sharded over two processes: the same runs, up to float rounding
        np.testing.assert_allclose(got[key], want[key], rtol=0.02, atol=0.05, err_msg=str(key))


@pytest.mark.integration
def test_an_unreachable_coordinator_fails_in_one_line_within_the_timeout():
    env = _env(_free_port(), 1, MARL_DISTRIBUTED_TIMEOUT="3")
    p = _train([*ARGS, "distributed=true"], env)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 2 and len(err.strip().splitlines()) == 1
    assert "no coordinator answers at 127.0.0.1:" in err and "after 3 s" in err


@pytest.mark.integration
def test_inconsistent_process_variables_fail_in_one_line():
    env = _env(_free_port(), 3)
    p = _train([*ARGS, "distributed=true"], env)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 2 and len(err.strip().splitlines()) == 1
    assert "JAX_PROCESS_ID 3 must be in 0 .. JAX_NUM_PROCESSES - 1" in err


# a process of a multi-host run as `marl train distributed=true` runs it: the work (here: join,
# then wait as a long segment would) in a child under the supervisor
_WORK = "from marl.run.processes.runtime import join_distributed; join_distributed(); print('joined', flush=True); import time; time.sleep(120)"  # noqa: E501
_HOST = f"import sys; from marl.run.processes.supervisor import supervise; sys.exit(supervise([sys.executable, '-c', {_WORK!r}]))"  # noqa: E501


@pytest.mark.integration
@pytest.mark.parametrize("lost", [1, 0])
def test_a_lost_process_ends_every_other_in_one_line_within_the_timeout(lost):
    """Host `lost` dies (its whole process group, as when a machine goes): the other ends with
    one line and exit code 1, within MARL_PEER_TIMEOUT (3 s here) of a peer's silence, at once
    when the coordinator (host 0) is gone."""
    import signal

    port = _free_port()
    hosts = [
        subprocess.Popen(
            [sys.executable, "-c", _HOST],
            env=_env(port, i, MARL_PEER_TIMEOUT="3"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        for i in (0, 1)
    ]
    try:
        for host in hosts:
            assert host.stdout.readline().strip() == "joined"
        os.killpg(hosts[lost].pid, signal.SIGKILL)
        _, err = hosts[1 - lost].communicate(timeout=60)  # far past the 3 s it takes
    finally:
        for host in hosts:
            if host.poll() is None:
                os.killpg(host.pid, signal.SIGKILL)
    assert hosts[1 - lost].returncode == 1
    assert len(err.strip().splitlines()) == 1 and err.startswith("marl: error: distributed=true")
    if lost == 1:
        assert "process 1 stopped answering for over 3 s (MARL_PEER_TIMEOUT)" in err
    else:  # JAX ends it at once; the supervisor says so in one line
        assert "JAX ended process 1" in err and "the coordinator or a peer was lost" in err


def test_the_supervisor_holds_the_runtimes_lines_and_shows_them_if_the_process_lives_on(
    capsys, monkeypatch
):
    from marl.run.processes import supervisor

    clock = [0.0]
    monkeypatch.setattr(supervisor.time, "monotonic", lambda: clock[0])
    relay = supervisor._Relay()
    native = "W1205 02:34:49.528367   20326 preemption_sync_manager.cc:147] Failed to retrieve\n"
    relay.line("[  1/10] 2,048 steps\n")
    relay.line(native)
    relay.line("Additional GRPC error information\n")  # continues the native line: held too
    relay.tick()
    assert capsys.readouterr().err == "[  1/10] 2,048 steps\n"
    clock[0] = supervisor.HOLD_S + 1  # the process lived on: they were no dying words
    relay.tick()
    assert capsys.readouterr().err == native + "Additional GRPC error information\n"
    relay.line("F1205 02:34:50.1   20326 client.h:80] Terminating process because X. More.\n")
    relay.line("*** Check failure stack trace: ***\n")
    relay.line("marl: error: the child's own line\n")  # drops what was held
    assert capsys.readouterr().err == "marl: error: the child's own line\n"
    assert relay.fatal == "Terminating process because X" and relay.said
