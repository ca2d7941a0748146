"""`marl train` as a Hydra application, so Hydra's launchers can spread a sweep over processes
or a cluster:

    python -m marl.app --multirun env=particle/spread,combat/3m algo=ippo,mappo seeds=10 \\
        hydra/launcher=joblib hydra.launcher.n_jobs=2          # local processes
    python -m marl.app --multirun ... hydra/launcher=submitit_slurm \\
        hydra.launcher.partition=gpu hydra.launcher.gpus_per_node=1   # one Slurm job per run

Each job validates its config, trains and writes its run directory exactly as `marl train`
does (same config tree, same overrides). Run directories are claimed atomically (`mkdir`, a
timestamp with a -2, -3 suffix when two jobs start in the same second) and every file is
written atomically, so concurrent jobs never corrupt one another; `name=` plus `resume=true`
makes a relaunched sweep continue its unfinished runs after their last segment and skip
nothing twice. `marl report` then reads all the run directories at once.

Launchers are Hydra plugins, installed with the `cluster` extra (`pip install -e ".[cluster]"`):
hydra-joblib-launcher and hydra-submitit-launcher; a launcher whose plugin is missing fails in
one line naming that command. Libraries' INFO logs (orbax's checkpoint lines through absl) stay
off the console and Hydra's log file unless `MARL_LIBRARY_LOGS=INFO` or `hydra.verbose=absl`
(`marl.learning.logs`).
"""

from __future__ import annotations

import importlib.util
import sys

from marl.learning.logs import LIBRARY_LOGGERS, quiet_library_logs
from marl.learning.xla import configure_xla

configure_xla()  # before JAX starts

import hydra  # noqa: E402
from omegaconf import DictConfig  # noqa: E402


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig) -> None:
    """One Hydra job: one `marl train` run."""
    from hydra.core.hydra_config import HydraConfig

    verbose = HydraConfig.get().verbose  # hydra.verbose=true or logger names: those kept
    try:
        quiet_library_logs(set(_names(verbose)))
    except ValueError as e:
        print(f"marl: error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    if cfg.get("distributed", False) is True:  # a launcher's job: join before any backend
        join_if_distributed(["", "distributed=true"])

    from marl.run.errors import ConfigError, UsageError
    from marl.run.processes.runtime import Watchdog, end_process, finish_distributed
    from marl.run.train.execute import train_run
    from marl.run.train.resolve import resolve
    from marl.run.train.settings import start_distributed

    overrides = list(HydraConfig.get().overrides.task)
    try:
        start_distributed(cfg)
        run = resolve(cfg, command=overrides)
        done = train_run(run)
        finish_distributed()  # a multi-host run's peers stop watching this process
    except (ConfigError, UsageError) as e:
        if Watchdog.running is not None:  # nothing waits on the peers
            end_process(str(e), 2)
        print(f"marl: error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    if done is None:
        raise SystemExit(130)


def _names(verbose: object) -> list[str]:
    """Logger names `hydra.verbose` asks for: every library's for true, else those it names
    (a name or a list of names)."""
    if verbose is True:
        return list(LIBRARY_LOGGERS)
    if not verbose:
        return []
    if isinstance(verbose, str):
        return [verbose]
    return [str(v) for v in verbose]  # type: ignore[attr-defined]


# Hydra launcher option -> (the plugin's module, its package): all in the `cluster` extra
LAUNCHERS = {
    "joblib": ("hydra_plugins.hydra_joblib_launcher", "hydra-joblib-launcher"),
    "submitit_local": ("hydra_plugins.hydra_submitit_launcher", "hydra-submitit-launcher"),
    "submitit_slurm": ("hydra_plugins.hydra_submitit_launcher", "hydra-submitit-launcher"),
}
INSTALL_CLUSTER = 'pip install -e ".[cluster]"'


def check_launcher(argv: list[str]) -> None:
    """A `hydra/launcher=NAME` whose plugin is not installed stops in one line naming the
    `cluster` extra (exit 2), before Hydra's search-path error."""
    for arg in argv[1:]:
        key, _, name = arg.partition("=")
        if key.lstrip("+") != "hydra/launcher" or name not in LAUNCHERS:
            continue
        module, package = LAUNCHERS[name]
        if _missing(module):
            print(
                f"marl: error: hydra/launcher={name} needs the {package} package: "
                f"{INSTALL_CLUSTER} (or pip install {package})",
                file=sys.stderr,
            )
            raise SystemExit(2)


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except ImportError:  # its parent package (hydra_plugins) is absent
        return True


def command_line(argv: list[str]) -> list[str]:
    """The command line with `marl train`'s add-or-override prefix on learner and env keyword
    overrides (`env.kwargs.num_agents=5` -> `++env.kwargs.num_agents=5`): the same overrides as
    `marl train`, whose validators name an unknown key."""
    from marl.run.train.compose import open_keys

    return [argv[0], *(a if a.startswith("-") else open_keys([a])[0] for a in argv[1:])]


def check_overrides(argv: list[str]) -> None:
    """Compose every job's config before Hydra does, so a misspelt env, learner or key gets
    `marl train`'s one-line error (exit 2) instead of Hydra's config search path."""
    from hydra._internal.utils import get_args_parser

    from marl.run.campaigns.sweep import sweep_overrides
    from marl.run.errors import ConfigError, UsageError
    from marl.run.train.compose import compose

    given = get_args_parser().parse_known_args(argv[1:])[0].overrides
    ours = [a for a in given if "hydra" not in a.split("=")[0]]  # launcher settings are Hydra's
    try:
        for combo in sweep_overrides(ours):
            compose(combo)
    except (ConfigError, UsageError) as e:
        print(f"marl: error: {e}", file=sys.stderr)
        raise SystemExit(2) from None


def supervise_if_distributed(argv: list[str]) -> None:
    """`distributed=true`: the job runs in a child process under `marl.run.processes.supervisor`,
    which ends it in one line when JAX's distributed service does (a coordinator or peer lost)."""
    from marl.run.processes.runtime import DistributedError, wants_distributed
    from marl.run.processes.supervisor import supervise, supervised

    try:
        if not wants_distributed(argv[1:]) or supervised():
            return
    except DistributedError as e:
        print(f"marl: error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    raise SystemExit(supervise([sys.executable, "-m", "marl.app", *argv[1:]]))


def join_if_distributed(argv: list[str]) -> None:
    """`distributed=true`: join `jax.distributed` before anything starts a JAX backend (checking
    the overrides imports the config module, which does); one line and exit 2 if it cannot."""
    from marl.run.processes.runtime import DistributedError, join_distributed, wants_distributed

    try:
        if wants_distributed(argv[1:]):
            join_distributed()
    except DistributedError as e:
        print(f"marl: error: {e}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    check_launcher(sys.argv)
    supervise_if_distributed(sys.argv)
    join_if_distributed(sys.argv)
    check_overrides(sys.argv)
    sys.argv = command_line(sys.argv)
    main()
