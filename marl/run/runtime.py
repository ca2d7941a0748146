"""Process-level settings for a multi-host run: joining `jax.distributed` before JAX starts,
with one-line errors (`DistributedError`) instead of JAX's aborts."""

from __future__ import annotations

import os


class DistributedError(RuntimeError):
    """A multi-host run that cannot start: one line saying why."""


DISTRIBUTED_TIMEOUT_S = 60  # how long to wait for the other processes (MARL_DISTRIBUTED_TIMEOUT)


RESUME_SINGLE_HOST = (
    "resume=true is single-host: a multi-host run keeps no checkpoints, so the hosts would start "
    "their seeds over; restart the multi-host run under another name="
)


def override_true(overrides: list[str] | tuple[str, ...], name: str) -> bool:
    """Whether command-line overrides set the flag `name` to true (`resume=true`)."""
    for item in overrides:
        key, _, value = item.partition("=")
        if key.lstrip("+") == name and value.strip().lower() == "true":
            return True
    return False


def wants_distributed(overrides: list[str] | tuple[str, ...]) -> bool:
    """Whether command-line overrides ask for a multi-host run (`distributed=true`); refuses
    `resume=true` beside it (`DistributedError`), before any host joins."""
    if not override_true(overrides, "distributed"):
        return False
    if override_true(overrides, "resume"):
        raise DistributedError(RESUME_SINGLE_HOST)
    return True


def join_distributed(timeout_s: int | None = None) -> None:
    """`jax.distributed.initialize()` once per process, before any JAX backend starts; the
    coordinator comes from the cluster (Slurm, Open MPI, Cloud TPU) or from
    JAX_COORDINATOR_ADDRESS / JAX_NUM_PROCESSES / JAX_PROCESS_ID. Waits at most `timeout_s`
    (default MARL_DISTRIBUTED_TIMEOUT or 60 s) for the other processes; any failure is a
    `DistributedError` of one line."""
    import jax

    if jax.distributed.is_initialized():
        return
    timeout = int(timeout_s or os.environ.get("MARL_DISTRIBUTED_TIMEOUT", DISTRIBUTED_TIMEOUT_S))
    where = os.environ.get("JAX_COORDINATOR_ADDRESS", "the cluster's coordinator")
    given = {k: os.environ.get(k) for k in ("JAX_NUM_PROCESSES", "JAX_PROCESS_ID")}
    kwargs: dict[str, int] = {}
    if any(given.values()):  # JAX reads only the address; marl reads these two itself
        try:
            n, i = int(given["JAX_NUM_PROCESSES"] or ""), int(given["JAX_PROCESS_ID"] or "")
        except ValueError:
            raise DistributedError(
                "distributed=true: JAX_NUM_PROCESSES and JAX_PROCESS_ID must both be integers, "
                f"got {given['JAX_NUM_PROCESSES']!r} and {given['JAX_PROCESS_ID']!r}"
            ) from None
        if not 0 <= i < n:
            raise DistributedError(
                f"distributed=true: JAX_PROCESS_ID {i} must be in 0 .. JAX_NUM_PROCESSES - 1 "
                f"({n - 1})"
            )
        kwargs = {"num_processes": n, "process_id": i}
    address = os.environ.get("JAX_COORDINATOR_ADDRESS")
    if address and kwargs.get("process_id", 0) > 0:
        # JAX's client aborts the whole process (no exception) when it cannot register with
        # the coordinator in time: find out first, and say so in one line
        _wait_for_coordinator(address, timeout)
    try:
        jax.distributed.initialize(initialization_timeout=timeout, **kwargs)
    except Exception as e:  # noqa: BLE001 - JAX raises several kinds; each becomes one line
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise DistributedError(
            f"distributed=true: could not join the multi-host run at {where} within "
            f"{timeout} s ({type(e).__name__}: {first}); check JAX_COORDINATOR_ADDRESS, "
            "JAX_NUM_PROCESSES and JAX_PROCESS_ID (or the cluster's own variables)"
        ) from None


def _wait_for_coordinator(address: str, timeout: float) -> None:
    """Until `timeout` seconds pass, try to open a TCP connection to `host:port`."""
    import socket
    import time

    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise DistributedError(
            f"distributed=true: JAX_COORDINATOR_ADDRESS must be host:port, got {address!r}"
        )
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=1.0):
                return
        except OSError as e:
            if time.monotonic() >= deadline:
                raise DistributedError(
                    f"distributed=true: no coordinator answers at {address} after {timeout:g} s "
                    f"({e.strerror or e}); start process 0 there first, or check "
                    "JAX_COORDINATOR_ADDRESS"
                ) from None
            time.sleep(0.5)
