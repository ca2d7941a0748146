"""Process-level settings for a multi-host run: joining `jax.distributed` before JAX starts,
with one-line errors (`DistributedError`) instead of JAX's aborts, and a watchdog that ends
every process in one line when one of them is lost.

Peer loss: each process beats a counter in the coordinator's key-value store every few seconds
(`Watchdog`, a daemon thread) and watches the others'. A process whose counter stops moving for
`MARL_PEER_TIMEOUT` seconds (default `PEER_TIMEOUT_S`), or a coordinator that stops answering
for as long, ends every remaining process with one `marl: error:` line and exit code 1, without
waiting on collectives or on JAX's shutdown barrier (`os._exit`). JAX's own heartbeat timeout
is set past it (`heartbeat_timeout`), so JAX's abort, a C++ stack trace, never comes first. A
process that ends its run says so (`finish_distributed`) and is not taken for lost.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
import time


class DistributedError(RuntimeError):
    """A multi-host run that cannot start: one line saying why."""


DISTRIBUTED_TIMEOUT_S = 60  # how long to wait for the other processes (MARL_DISTRIBUTED_TIMEOUT)
PEER_TIMEOUT_S = 60  # a process silent this long is lost: every process ends (MARL_PEER_TIMEOUT)


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
    peers = peer_timeout()
    try:
        jax.distributed.initialize(
            initialization_timeout=timeout,
            heartbeat_timeout_seconds=heartbeat_timeout(peers),
            **kwargs,
        )
    except Exception as e:  # noqa: BLE001 - JAX raises several kinds; each becomes one line
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise DistributedError(
            f"distributed=true: could not join the multi-host run at {where} within "
            f"{timeout} s ({type(e).__name__}: {first}); check JAX_COORDINATOR_ADDRESS, "
            "JAX_NUM_PROCESSES and JAX_PROCESS_ID (or the cluster's own variables)"
        ) from None
    Watchdog.start_once(peers)


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


def peer_timeout() -> float:
    """Seconds a silent process is waited for (MARL_PEER_TIMEOUT, default `PEER_TIMEOUT_S`)."""
    text = os.environ.get("MARL_PEER_TIMEOUT", str(PEER_TIMEOUT_S))
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise DistributedError(f"MARL_PEER_TIMEOUT must be a number of seconds > 0, got {text!r}")
    return value


def heartbeat_timeout(peers: float) -> int:
    """JAX's own heartbeat timeout: well past the watchdog's, so that the watchdog speaks first."""
    return int(max(100, 3 * peers + 30))


def end_process(line: str, code: int = 1) -> None:
    """Print `line` as marl's one error line and end this process now: no collective, atexit
    hook or JAX shutdown barrier waits on the peers that are gone."""
    print(f"marl: error: {line}", file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(code)


def finish_distributed() -> None:
    """This process ended its part of the run: its peers stop watching it (a no-op when the
    process is not part of a multi-host run)."""
    if Watchdog.running is not None:
        Watchdog.running.done()


class Watchdog(threading.Thread):
    """Beats this process's counter in the coordinator's key-value store and ends the process
    in one line (`end_process`) when a peer's counter, or the coordinator, is silent for
    `timeout` seconds."""

    running: Watchdog | None = None

    def __init__(self, client: object, me: int, processes: int, timeout: float):
        super().__init__(name="marl-peer-watchdog", daemon=True)
        self.client, self.me, self.timeout = client, me, timeout
        self.peers = [p for p in range(processes) if p != me]
        self.interval = min(2.0, timeout / 5)
        self._stop_event = threading.Event()

    @classmethod
    def start_once(cls, timeout: float) -> None:
        """Watch the run this process joined (once; nothing for a single process)."""
        import jax
        from jax._src import distributed

        client = distributed.global_state.client
        if cls.running is not None or client is None or jax.process_count() < 2:
            return
        cls.running = cls(client, jax.process_index(), jax.process_count(), timeout)
        cls.running.start()
        atexit.register(cls.running.stop)  # before JAX's shutdown: a normal exit is no loss

    def stop(self) -> None:
        self._stop_event.set()

    def done(self) -> None:
        """Say that this process ended its run (its silence is then no loss)."""
        with contextlib.suppress(Exception):  # the coordinator may be gone: nothing to tell
            self.client.key_value_set(f"marl/done/{self.me}", "1", allow_overwrite=True)

    def _get(self, key: str) -> str | None:
        try:
            return self.client.key_value_try_get(key)
        except Exception as e:  # noqa: BLE001 - not found, or the coordinator is gone
            if "NOT_FOUND" in str(e) or "not found" in str(e).lower():
                return None
            raise

    def run(self) -> None:
        beat, now = 0, time.monotonic()
        last = {p: (None, now) for p in self.peers}  # each peer's counter and when it moved
        answered = now  # the coordinator's last answer
        while not self._stop_event.wait(self.interval):
            now = time.monotonic()
            try:
                beat += 1
                self.client.key_value_set(f"marl/alive/{self.me}", str(beat), allow_overwrite=True)
                for p in self.peers:
                    if self._get(f"marl/done/{p}") is not None:
                        last[p] = (None, now)
                        continue
                    value = self._get(f"marl/alive/{p}")
                    if value != last[p][0]:
                        last[p] = (value, now)
                answered = now
            except Exception as e:  # noqa: BLE001 - the coordinator does not answer
                if now - answered > self.timeout and not self._stop_event.is_set():
                    first = (str(e).strip().splitlines() or [type(e).__name__])[0][:160]
                    self._lost(f"the coordinator (process 0) stopped answering ({first})")
                continue
            silent = [p for p in self.peers if now - last[p][1] > self.timeout]
            if silent and not self._stop_event.is_set():
                names = ", ".join(map(str, silent))
                self._lost(f"process {names} stopped answering")

    def _lost(self, what: str) -> None:
        end_process(
            f"distributed=true: {what} for over {self.timeout:g} s (MARL_PEER_TIMEOUT); the run "
            f"cannot go on without it, so process {self.me} ends too; restart the multi-host run "
            "under another name="
        )
