"""Segment checkpoints: a killed run resumes at its last finished segment (orbax-checkpoint).

`marl.learning.runner.run` saves, after every segment's evaluation, the training state of
every seed, each seed's best evaluated parameters and the run's history (evaluation steps and
results, training metrics, best scores, training time) into `<run dir>/checkpoint/<segment>/`,
keeping only the newest. Saving is synchronous: it finishes before the next segment donates the
state's buffers. Restoring needs a state of the same structure (the freshly initialised one), so a
resumed run compiles the same programs and continues bit for bit: its record equals the one an
uninterrupted run writes.

Typed PRNG keys are stored as their raw key data and rewrapped with the template's key
implementation on restore; empty arrays (which orbax cannot store) are rebuilt from the template.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import shutil
import sys
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

History = dict[str, Any]

# orbax looks for per-process OCDBT files to merge after every save and warns when it finds none,
# which is always, since these checkpoints do not use OCDBT (see SegmentCheckpoints)
_NO_MERGE = "Skipping merge of OCDBT checkpoints"


class _DropNoMergeWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return _NO_MERGE not in str(record.msg)


def _quiet_orbax() -> None:
    """Drop orbax's per-save 'no OCDBT files to merge' warning from the absl logger (once)."""
    logger = logging.getLogger("absl")
    if not any(isinstance(f, _DropNoMergeWarning) for f in logger.filters):
        logger.addFilter(_DropNoMergeWarning())


def _is_key(x: Any) -> bool:
    return hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def template(tree: Any) -> Any:
    """`tree`'s shapes and dtypes (`jax.ShapeDtypeStruct`), typed keys kept as they are (small,
    and their implementation rewraps the restored key data): a restore template that holds
    no array memory, so a restored state never sits beside the one it replaces."""
    return jax.tree.map(lambda x: x if _is_key(x) else jax.ShapeDtypeStruct(x.shape, x.dtype), tree)


def _pack(tree: Any) -> dict[str, Any]:
    """The tree's leaves by flat index: typed keys as their key data, empty arrays left out
    (orbax cannot store them; `_unpack` rebuilds them from the template)."""
    out = {}
    for i, x in enumerate(jax.tree.leaves(tree)):
        x = jax.random.key_data(x) if _is_key(x) else x
        if x.size:
            out[str(i)] = x
    return out


def digest(packed: dict[str, Any]) -> str:
    """sha256 over `_pack`'s leaves (index, dtype, shape, bytes): what `restore` checks, so a
    flipped bit in a saved segment is refused, never resumed from."""
    h = hashlib.sha256()
    for key in sorted(packed, key=int):
        a = np.asarray(packed[key])  # in the dtype JAX restores it as (float64 -> float32)
        a = a.astype(jax.dtypes.canonicalize_dtype(a.dtype), copy=False)
        h.update(f"{key}:{a.dtype.str}:{a.shape};".encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _digest_path(directory: Path, segment: int) -> Path:
    return directory / f"digest-{segment}.json"


def _unpack(packed: dict[str, Any], like: Any) -> Any:
    """The tree of `like` with `_pack`'s leaves put back (keys rewrapped as `like`'s)."""
    leaves, treedef = jax.tree.flatten(like)
    out = []
    for i, template in enumerate(leaves):
        if str(i) not in packed:
            out.append(jnp.zeros(template.shape, template.dtype))
        elif _is_key(template):
            out.append(jax.random.wrap_key_data(packed[str(i)], impl=jax.random.key_impl(template)))
        else:
            out.append(packed[str(i)])
    return jax.tree.unflatten(treedef, out)


def stack_history(
    steps: list[int],
    evaluations: list[dict[str, np.ndarray]],
    train_metrics: list[dict[str, np.ndarray]],
    **extra: Any,
) -> History:
    """Lists of per-segment dicts as stacked arrays (what `SegmentCheckpoints.save` stores)."""

    def stack(rows: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
        return {k: np.stack([np.asarray(r[k]) for r in rows]) for k in rows[0]} if rows else {}

    out = {
        "steps": np.asarray(steps, np.int64),
        "evaluations": stack(evaluations),
        "train_metrics": stack(train_metrics),
    }
    return {**out, **{k: np.asarray(v) for k, v in extra.items()}}


def unstack(stacked: dict[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
    """The inverse of `stack_history`'s stacking: one dict per leading index."""
    if not stacked:
        return []
    n = len(next(iter(stacked.values())))
    return [{k: np.asarray(v[i]) for k, v in stacked.items()} for i in range(n)]


def saved_segment(directory: str | Path) -> int | None:
    """The newest segment saved in `directory`, read from its folder names (orbax's finished
    steps are named by their number; a save in progress carries a suffix), or None. Cheap: no
    orbax manager is built, nothing is created."""
    path = Path(directory)
    if not path.is_dir():
        return None
    steps = [int(p.name) for p in path.iterdir() if p.is_dir() and p.name.isdigit()]
    return max(steps, default=None)


def _ignore(*args: Any) -> None:
    """A hook that reports nothing."""


@contextlib.contextmanager
def _failures_said_once() -> Iterator[None]:
    """While orbax saves, its worker threads' own reports of a failure (absl and asyncio logs
    with tracebacks, threads' uncaught exceptions) are held back: the save's exception says
    it once."""
    loggers = [logging.getLogger(name) for name in ("absl", "asyncio")]
    levels = [logger.level for logger in loggers]
    hooks = threading.excepthook, sys.excepthook, sys.unraisablehook
    for logger in loggers:
        logger.setLevel(logging.CRITICAL + 1)
    threading.excepthook = _ignore
    sys.unraisablehook = _ignore
    sys.excepthook = _ignore  # tensorstore's callbacks into a closed event loop
    try:
        yield
    finally:
        threading.excepthook, sys.excepthook, sys.unraisablehook = hooks
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def _mute_leftovers() -> None:
    """After a failed save: the futures and coroutines orbax left behind are reported when
    they are collected (asyncio's log, a RuntimeWarning at exit); the failure is said already."""
    logging.getLogger("asyncio").setLevel(logging.CRITICAL + 1)
    warnings.filterwarnings("ignore", message="coroutine .* was never awaited")
    sys.excepthook = _ignore
    sys.unraisablehook = _ignore


def _read_digest(directory: Path, segment: int) -> str | None:
    """The sha256 saved with `segment`; None for a checkpoint saved before digests were."""
    path = _digest_path(directory, segment)
    if not path.is_file():
        return None
    try:
        found = json.loads(path.read_text()[:1000])["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        raise ValueError(f"{path.name} is not a digest") from None
    return str(found)


class CheckpointError(RuntimeError):
    """A saved segment that cannot be restored (truncated, corrupt): one line naming it."""


class SegmentCheckpoints:
    """The newest segment checkpoint of one run, in `directory`."""

    def __init__(self, directory: str | Path):
        import orbax.checkpoint as ocp

        _quiet_orbax()
        self.directory = Path(directory).absolute()
        self._ocp = ocp
        # one zarr array per leaf, not orbax's default OCDBT store: OCDBT finds its per-process
        # files with a glob, which fails on a run directory named after env keywords
        # ("3m[see_enemy_actions=true]"), and such a checkpoint did not restore
        arrays = ocp.StandardCheckpointHandler(use_ocdbt=False)
        history = ocp.PyTreeCheckpointHandler(use_ocdbt=False)
        registry = ocp.handlers.DefaultCheckpointHandlerRegistry()
        registry.add("arrays", ocp.args.StandardSave, arrays)
        registry.add("arrays", ocp.args.StandardRestore, arrays)
        registry.add("history", ocp.args.PyTreeSave, history)
        registry.add("history", ocp.args.PyTreeRestore, history)
        with _failures_said_once():  # a corrupt saved step is reported by `restore`, once
            self._manager = ocp.CheckpointManager(
                self.directory,
                options=ocp.CheckpointManagerOptions(
                    max_to_keep=1, create=True, enable_async_checkpointing=False
                ),
                handler_registry=registry,
            )

    def latest(self) -> int | None:
        """The newest saved segment, or None."""
        with _failures_said_once():
            return self._manager.latest_step()

    def save(self, segment: int, state: Any, best: Any, history: History) -> None:
        """Store segment `segment`: the training state, the best parameters, the history."""
        ocp = self._ocp
        arrays = _pack({"state": state, "best": best})
        try:
            with _failures_said_once():
                self._manager.save(
                    segment,
                    args=ocp.args.Composite(
                        arrays=ocp.args.StandardSave(arrays), history=ocp.args.PyTreeSave(history)
                    ),
                )
                self._manager.wait_until_finished()
            for old in self.directory.glob("digest-*.json"):
                old.unlink()
            path = _digest_path(self.directory, segment)
            path.with_suffix(".tmp").write_text(json.dumps({"sha256": digest(arrays)}))
            path.with_suffix(".tmp").replace(path)  # whole or not there
        except Exception as e:  # noqa: BLE001 - orbax and tensorstore raise many kinds
            _mute_leftovers()  # orbax's abandoned writes would speak again as the process ends
            text = str(e)
            full = "No space left" in text or "os_error_code='28'" in text
            first = (text.strip().splitlines() or [type(e).__name__])[0][:160]
            if full:
                raise OSError(
                    errno.ENOSPC,
                    f"no space left on device for the checkpoint of segment {segment}",
                    str(self.directory),
                ) from None
            raise OSError(
                errno.EIO,
                f"cannot save the checkpoint of segment {segment} ({first})",
                str(self.directory),
            ) from None

    def restore(self, segment: int, state_like: Any, best_like: Any) -> tuple[Any, Any, History]:
        """(state, best, history) of `segment`, the arrays shaped and typed as the templates."""
        ocp = self._ocp
        like = {"state": state_like, "best": best_like}
        abstract = jax.eval_shape(_pack, like)
        try:
            with _failures_said_once():
                out = self._manager.restore(
                    segment,
                    args=ocp.args.Composite(
                        arrays=ocp.args.StandardRestore(abstract), history=ocp.args.PyTreeRestore()
                    ),
                )
            expected = _read_digest(self.directory, segment)
            if expected is not None and digest(dict(out.arrays)) != expected:
                raise ValueError("its arrays differ from what was saved (sha256 mismatch)")
            arrays = _unpack(dict(out.arrays), like)
            history = jax.tree.map(np.asarray, dict(out.history))
        except Exception as e:  # noqa: BLE001 - orbax and tensorstore raise many kinds
            first = (str(e).strip().splitlines() or [""])[0][:200]
            raise CheckpointError(
                f"{self.directory / str(segment)}: cannot restore this checkpoint "
                f"({type(e).__name__}: {first}); remove {self.directory} to train the run over "
                "from the start, or train under another name="
            ) from None
        return arrays["state"], arrays["best"], history

    def clear(self) -> None:
        """Delete the checkpoints (a finished run keeps only its record and parameters)."""
        self._manager.close()
        shutil.rmtree(self.directory, ignore_errors=True)
