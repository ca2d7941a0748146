"""The registry's environments and learners for a run, each failure a one-line `ConfigError`
(`make_env`, `learner_factory`); what a learner says of itself beside its `make_train`
(`LearnerInfo`); and the run's learner built once, for the run's length (`build_learner`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from marl.core import registry
from marl.core.registry import RegistryError
from marl.learning.training import RunSettings, probe_learner
from marl.run.errors import ConfigError

if TYPE_CHECKING:
    from marl.core.env import EnvSpec, MultiAgentEnv
    from marl.core.learner import Train

ACTION_KINDS = ("discrete", "continuous")
TRAIN_FIELDS = ("init", "step", "params", "policy", "steps_per_update")


@dataclass(frozen=True)
class LearnerInfo:
    """What a learner says of itself, as attributes of its `make_train`, each optional:

    `make_train.action_kinds`: the action spaces it acts in (default: both; the value-based
    and mean-field learners say `("discrete",)`), checked before anything is built.
    `make_train.label(cfg)`: its name in records for these settings (default: its registry
    name; `teams` names its sides' learners, `mfq+il`).
    `make_train.steps_per_update(env, cfg)`: the env steps one update takes, as the Train
    `make_train(env, cfg, ...)` returns will say, known without building it. The run's length
    (which an annealed learning rate needs when the learner is built) hangs on it: a learner
    that says it is built once; one that does not is built a first time to read it.
    """

    action_kinds: tuple[str, ...] = ACTION_KINDS
    label: Callable[[dict[str, Any]], str] | None = None
    steps_per_update: Callable[[MultiAgentEnv, dict[str, Any]], int] | None = None

    @classmethod
    def of(cls, make_train: Callable[..., Any]) -> LearnerInfo:
        """What `make_train` says (its attributes), the defaults where it says nothing."""
        return cls(
            tuple(getattr(make_train, "action_kinds", ACTION_KINDS)),
            getattr(make_train, "label", None),
            getattr(make_train, "steps_per_update", None),
        )

    def record_name(self, algo: str, algo_cfg: dict[str, Any]) -> str:
        """The learner's name in records: its `label(cfg)` where it has one, else `algo`."""
        return self.label(algo_cfg) if callable(self.label) else algo


def make_env(env_id: str, kwargs: dict[str, Any]) -> MultiAgentEnv:
    """`marl.make` with every failure a one-line ConfigError."""
    try:
        return registry.make(env_id, **kwargs)
    except RegistryError as e:
        raise ConfigError(str(e)) from None
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{env_id}: {e}") from None
    except ImportError as e:
        raise ConfigError(f"{env_id} is registered but cannot be imported: {e}") from None


def learner_factory(name: str) -> Callable[..., Train]:
    """The registered learner `name`'s `make_train`; ConfigError naming why it is unusable."""
    try:
        return registry.algorithm(name)
    except RegistryError as e:
        raise ConfigError(str(e)) from None
    except ImportError as e:
        raise ConfigError(f"algorithm {name!r} is registered but cannot be imported: {e}") from None


def check_compatible(algo: str, make_train: Callable[..., Any], env_id: str, spec: EnvSpec) -> None:
    """Refuse a learner on an action space it cannot act in (e.g. value-based, continuous)."""
    kind = "discrete" if spec.discrete else "continuous"
    supported = LearnerInfo.of(make_train).action_kinds
    if kind not in supported:
        raise ConfigError(
            f"{algo} acts only in {' or '.join(supported)} action spaces; {env_id} has {kind} "
            f"actions (learners for {kind} actions: {', '.join(learners_for(kind)) or 'none'})"
        )


def learners_for(kind: str) -> list[str]:
    """The registered learners that act in `kind` action spaces."""
    out = []
    for name in registry.list_algorithms():
        try:
            if kind in LearnerInfo.of(registry.algorithm(name)).action_kinds:
                out.append(name)
        except Exception:  # an unimportable learner is simply not suggested
            continue
    return out


def build_learner(
    algo: str,
    make_train: Callable[..., Train],
    env: MultiAgentEnv,
    algo_cfg: dict[str, Any],
    settings: RunSettings,
) -> tuple[int, Train]:
    """(env steps per update, the learner built for the run's total updates, once): the size
    of an update, which the schedule and so the annealing hang on, is what the learner says
    (`LearnerInfo.steps_per_update`), or for one that says nothing what a first build of it
    says; the Train built must say the same."""
    declared = LearnerInfo.of(make_train).steps_per_update
    try:
        if declared is not None:
            steps, said = _update_size(algo, declared(env, dict(algo_cfg))), "it says"
        else:  # a learner that does not say: built a first time to read it
            probe = _train(algo, probe_learner(make_train, env, dict(algo_cfg)))
            steps, said = _update_size(algo, probe.steps_per_update), "its first build said"
        train = _train(algo, make_train(env, dict(algo_cfg), settings.total_updates(steps)))
    except (TypeError, ValueError, KeyError) as e:
        if isinstance(e, ConfigError):
            raise
        raise ConfigError(f"algo {algo}: {e}") from None
    if _update_size(algo, train.steps_per_update) != steps:
        raise ConfigError(
            f"algo {algo}: the Train built for the run says steps_per_update="
            f"{train.steps_per_update!r}, where {said} {steps}"
        )
    return steps, train


def _train(algo: str, train: Any) -> Train:
    """`train` if it is a `marl.core.learner.Train`, else one line saying it is not."""
    if not all(hasattr(train, k) for k in TRAIN_FIELDS):
        raise ConfigError(
            f"algo {algo}: its make_train returned {type(train).__name__}, not a "
            f"marl.core.learner.Train ({', '.join(TRAIN_FIELDS)})"
        )
    return train


def _update_size(algo: str, steps: Any) -> int:
    """`steps_per_update` as a Train or a learner says it, checked to be an integer >= 1."""
    if not str(steps).isdigit() or int(steps) < 1:
        raise ConfigError(f"algo {algo}: steps_per_update={steps!r}, not >= 1")
    return int(steps)
