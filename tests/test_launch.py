"""Runs as scheduler jobs (`marl.run.campaigns.launch`, `--launcher local|slurm`): submitit's local
executor with a cap on jobs at once, Slurm submissions through a stand-in `sbatch`, the
state of launched jobs, a stopped launcher; under -m slow, a tiny benchmark run as local jobs
equals the same cells run in-process, and resumes after the launcher is killed."""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from test_benchmark import _cli

pytest.importorskip("submitit")

from marl.run.campaigns import launch, launch_options, launch_records  # noqa: E402
from marl.run.errors import UsageError  # noqa: E402


def _sh(script: str) -> functools.partial:
    """A picklable job target (stdlib only, so the job's process can unpickle it)."""
    return functools.partial(subprocess.run, ["sh", "-c", script], check=True)


def _opts(tmp_path: Path, **kw) -> launch_options.LaunchOptions:
    return launch_options.options("local", tmp_path / "jobs", **kw)


@pytest.mark.integration
def test_local_jobs_run_at_most_n_at_once_and_failures_are_named(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    jobs = [
        launch.Job(f"job{k}", _sh(f"touch {marks}/{k}.start; sleep 1; touch {marks}/{k}.end"))
        for k in range(3)
    ]
    jobs.append(launch.Job("broken", _sh("exit 3")))
    lines: list[str] = []
    failed = launch.launch(jobs, _opts(tmp_path, jobs=2), log=lines.append)
    assert [key for key, _ in failed] == ["broken"] and "exit status 3" in failed[0][1]
    spans = [
        ((marks / f"{k}.start").stat().st_mtime, (marks / f"{k}.end").stat().st_mtime)
        for k in range(3)
    ]
    overlapping = max(sum(a <= t < b for a, b in spans) for t, _ in spans)
    assert overlapping <= 2
    recorded = launch_records.read_jobs(tmp_path / "jobs")
    assert set(recorded) == {"job0", "job1", "job2", "broken"}
    states = launch_records.states(tmp_path / "jobs")
    assert states["job0"] == "FINISHED" and states["broken"] == "FAILED"
    assert any(line.startswith("started job0: local job ") for line in lines)


@pytest.mark.integration
def test_a_relaunch_leaves_a_running_job_to_itself(tmp_path):
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        opts = _opts(tmp_path)
        launch_records._write_jobs(
            opts.folder,
            {
                "cell": {
                    "launcher": "local",
                    "job_id": str(sleeper.pid),
                    "host": launch_records._host(),
                }
            },
        )
        lines: list[str] = []
        assert launch.launch([launch.Job("cell", _sh("exit 1"))], opts, log=lines.append) == []
        assert lines == [f"cell: local job {sleeper.pid} is RUNNING; left to it"]
    finally:
        sleeper.kill()
        sleeper.wait()
    assert launch_records.states(tmp_path / "jobs") == {"cell": "INTERRUPTED"}


STOPPED = textwrap.dedent(
    """
    import functools, subprocess, sys
    from pathlib import Path
    from marl.run.campaigns import launch, launch_options
    folder = Path(sys.argv[1])
    job = launch.Job("long", functools.partial(
        subprocess.run, ["sh", "-c", f"echo $$ > {folder}/pid; exec sleep 60"], check=True))
    try:
        launch.launch([job], launch_options.options("local", folder / "jobs"))
    except KeyboardInterrupt:
        print("stopped")
        sys.exit(130)
    """
)


@pytest.mark.integration
@pytest.mark.parametrize("ctrl_c", [False, True], ids=["sigterm", "ctrl-c"])
def test_a_stopped_launcher_stops_its_local_jobs_in_one_line(tmp_path, ctrl_c):
    """SIGTERM to the launcher, or Ctrl-C in its terminal (SIGINT to the whole process group,
    the jobs' controllers included): the jobs end, and no traceback reaches the console."""
    proc = subprocess.Popen(
        [sys.executable, "-c", STOPPED, str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    pid_file = tmp_path / "pid"
    deadline = time.monotonic() + 120
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert pid_file.exists(), "the job never started"
    time.sleep(0.5)
    if ctrl_c:
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "stopped" in out
    assert "Traceback" not in err, err
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 30
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(pid), "the job's process outlived its launcher"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "\nState:\tZ" in status.read_text())


FAKE_SBATCH = """#!/bin/sh
cp "$1" "{log}/submitted.sh"
echo "Submitted batch job 4242"
"""
FAKE_SACCT = """#!/bin/sh
printf 'JobID|State|NodeList\\n4242|RUNNING|node7\\n'
"""


@pytest.mark.integration
def test_slurm_jobs_carry_the_options_and_a_limit_from_the_measured_cost(tmp_path, monkeypatch):
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for name, text in (("sbatch", FAKE_SBATCH), ("sacct", FAKE_SACCT), ("srun", "#!/bin/sh\n")):
        (bin_ / name).write_text(text.format(log=tmp_path))
        (bin_ / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}{os.pathsep}{os.environ['PATH']}")
    config = tmp_path / "launcher.yaml"
    config.write_text("partition: gpu\naccount: rl\ngpus_per_job: 1\nsetup: [module load cuda]\n")
    opts = launch_options.options("slurm", tmp_path / "jobs", str(config), cpus_per_job=8)
    lines: list[str] = []
    job = launch.Job("combat/3m/qmix", _sh("true"), estimate_s=3600.0)
    assert launch.launch([job], opts, log=lines.append) == []
    script = (tmp_path / "submitted.sh").read_text()
    for line in (
        "#SBATCH --partition=gpu",
        "#SBATCH --account=rl",
        "#SBATCH --gpus-per-node=1",
        "#SBATCH --cpus-per-task=8",
        f"#SBATCH --time={2 * 60 + launch.SLACK_MIN}",
        "module load cuda",
    ):
        assert line in script, line
    assert lines == [f"submitted combat/3m/qmix: slurm job 4242, {135} min"]
    assert launch_records.read_jobs(opts.folder)["combat/3m/qmix"]["job_id"] == "4242"
    lines.clear()  # a relaunch asks Slurm and leaves the running job alone
    assert launch.launch([job], opts, log=lines.append) == []
    assert lines == ["combat/3m/qmix: slurm job 4242 is RUNNING; left to it"]


def test_time_limits_and_options_fail_in_one_line(tmp_path):
    opts = _opts(tmp_path)
    assert launch.time_limit(launch.Job("a", print, 600.0), opts) == 20 + launch.SLACK_MIN
    assert launch.time_limit(launch.Job("a", print), opts) == launch.DEFAULT_LIMIT_MIN
    fixed = _opts(tmp_path, time_limit_min=90)
    assert launch.time_limit(launch.Job("a", print, 600.0), fixed) == 90
    bad = tmp_path / "bad.yaml"
    bad.write_text("partitions: gpu\n")
    with pytest.raises(UsageError, match="unknown key.*partitions; valid: jobs, partition"):
        launch_options.options("slurm", tmp_path, str(bad))
    with pytest.raises(UsageError, match="--launcher 'pbs' unknown; valid: local, slurm"):
        launch_options.options("pbs", tmp_path)


@pytest.mark.parametrize(
    "text, says",
    [
        ('partition: "gpu\\n#SBATCH --wrap=rm"\n', "partition=.*a name on one line"),
        ("account: [a, b]\n", "account=.*a name on one line"),
        ("mem_gb: lots\n", "mem_gb='lots': expected a number of GB > 0"),
        ("mem_gb: -4\n", "mem_gb=-4"),
        ("setup: module load cuda\n", "setup=.*a list of shell lines"),
        ("setup: [[nested]]\n", "setup=.*a list of shell lines"),
        ("additional: {'x y': 1}\n", "additional=.*#SBATCH keys"),
        ('additional: {gres: "gpu:1\\nrm -rf ~"}\n', "additional=.*on one line"),
    ],
)
def test_launcher_config_values_are_checked(tmp_path, text, says):
    """A value that would break (or add lines to) a job script fails in one line, never
    reaching submitit."""
    config = tmp_path / "launcher.yaml"
    config.write_text(text)
    with pytest.raises(UsageError, match=says):
        launch_options.options("slurm", tmp_path / "jobs", str(config))


def test_launcher_flags_need_a_launcher_and_submitit_is_named(tmp_path, monkeypatch):
    code, _, err = _cli("benchmark", "run", "v1", "--jobs", "2", "--records", str(tmp_path))
    assert code == 2 and "--jobs: only with --launcher local|slurm" in err
    code, _, err = _cli("benchmark", "status", "v1", "--launcher", "local")
    assert code == 2 and "--launcher: only with `marl benchmark run`" in err
    monkeypatch.setitem(sys.modules, "submitit", None)
    with pytest.raises(UsageError, match=r"needs submitit, in the cluster extra: pip install"):
        launch.executor(_opts(tmp_path))


TINY = """
name: tiny
records: {records}
protocol: default
tiers:
  cpu:
    particle:
      budget: 4096
      seeds: 2
      tasks: [particle/simple, "particle/spread[num_agents=2]"]
      algos: [ippo, iql]
      overrides:
        all: [protocol.num_evaluations=4, protocol.absolute_episodes=4,
              protocol.eval_episodes=2, algo.num_envs=4, algo.rollout_length=32]
        iql: [algo.buffer_size=64]
"""


def _records(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("record.json"))}


@pytest.mark.integration
@pytest.mark.slow
def test_a_benchmark_as_local_jobs_equals_it_in_process_and_resumes(tmp_path):
    jobs_def, here_def = tmp_path / "jobs.yaml", tmp_path / "here.yaml"
    jobs_def.write_text(TINY.format(records=tmp_path / "jobs"))
    here_def.write_text(TINY.format(records=tmp_path / "here"))
    command = [sys.executable, "-m", "marl.cli", "benchmark", "run", str(jobs_def)]
    started = time.monotonic()
    first = subprocess.Popen(
        [*command, "--launcher", "local", "--jobs", "2"], stdout=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 600  # stop it once a cell has saved a segment
    while time.monotonic() < deadline and not list((tmp_path / "jobs").rglob("checkpoint/*")):
        time.sleep(0.5)
    first.send_signal(signal.SIGTERM)
    first.communicate(timeout=300)
    assert first.returncode == 130
    again = subprocess.run(
        [*command, "--launcher", "local", "--jobs", "2"],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert again.returncode == 0, again.stderr[-2000:]
    assert "resuming" in "".join(
        p.read_text() for p in (tmp_path / "jobs/.jobs").rglob("*_log.out")
    )
    launched_s = time.monotonic() - started
    started = time.monotonic()
    code, _, err = _cli("benchmark", "run", str(here_def))
    assert code == 0, err[-2000:]
    here_s = time.monotonic() - started
    print(f"local jobs (with a stop) {launched_s:.0f} s; in-process {here_s:.0f} s")
    here, there = _records(tmp_path / "here"), _records(tmp_path / "jobs")
    assert len(here) == 4 and here == there
    status = subprocess.run(
        [*command[:-2], "status", str(jobs_def)], capture_output=True, text=True, timeout=300
    )
    assert "0 of 4 cells left" in status.stdout and "FINISHED" in status.stdout
    json.loads((tmp_path / "jobs/.jobs/jobs.json").read_text())
