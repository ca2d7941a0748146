"""JaxMARL adapters, both ways.

- `MarlToJaxMARL(env)`: a marl env seen as a JaxMARL `MultiAgentEnv` (dicts keyed by agent);
  JaxMARL's own training scripts run on it unchanged.
- `JaxMARLToMarl(env)`: a JaxMARL env seen as a marl `MultiAgentEnv` (agents on axis 0).
- `import_jaxmarl()`: import jaxmarl without its import-time chatter; `JAXMARL_NAMES`: the
  JaxMARL registry name of each marl task that has one.

jaxmarl is optional: importing this module never imports it. `MarlToJaxMARL` is built on first
access and subclasses jaxmarl's `MultiAgentEnv` only when jaxmarl is importable.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from typing import Any

from marl.interop.jaxmarl_to_marl import JaxMARLState, JaxMARLToMarl
from marl.interop.marl_to_jaxmarl import MarlJaxMARLState, _MarlToJaxMARL

__all__ = [
    "JAXMARL_NAMES",
    "JaxMARLState",
    "JaxMARLToMarl",
    "MarlJaxMARLState",
    "MarlToJaxMARL",  # noqa: F822 - built lazily by the module `__getattr__` below
    "import_jaxmarl",
]

# marl id -> JaxMARL registry name of the same task.
JAXMARL_NAMES = {
    "particle/simple": "MPE_simple_v3",
    "particle/spread": "MPE_simple_spread_v3",
    "particle/adversary": "MPE_simple_adversary_v3",
    "particle/tag": "MPE_simple_tag_v3",
    "particle/push": "MPE_simple_push_v3",
    "particle/reference": "MPE_simple_reference_v3",
    "particle/speaker_listener": "MPE_simple_speaker_listener_v4",
    "particle/crypto": "MPE_simple_crypto_v3",
    "particle/world_comm": "MPE_simple_world_comm_v3",
}


_LAZY: dict[str, type] = {}


def _build_marl_to_jaxmarl() -> type:
    try:
        from jaxmarl.environments.multi_agent_env import MultiAgentEnv as JaxMARLEnv
    except ImportError:
        bases: tuple[type, ...] = (_MarlToJaxMARL,)
    else:
        bases = (_MarlToJaxMARL, JaxMARLEnv)
    attrs = {"__module__": __name__, "__qualname__": "MarlToJaxMARL"}
    return type("MarlToJaxMARL", bases, {**attrs, "__doc__": _MarlToJaxMARL.__doc__})


def __getattr__(name: str) -> Any:
    # `MarlToJaxMARL` is built on first use so that importing this module never imports jaxmarl
    if name == "MarlToJaxMARL":
        if name not in _LAZY:
            _LAZY[name] = _build_marl_to_jaxmarl()
        return _LAZY[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def import_jaxmarl() -> Any:
    """Import JaxMARL without its import-time chatter.

    JaxMARL prints on import, and its MABrax module points `sys.stdout`/`sys.stderr` back at
    the process's own streams; both are silenced at the file-descriptor level and restored.
    """
    if "jaxmarl" in sys.modules:
        return sys.modules["jaxmarl"]
    out, err = sys.stdout, sys.stderr
    out.flush()
    if sys.__stdout__ is not None:
        sys.__stdout__.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        with contextlib.redirect_stdout(io.StringIO()):
            import jaxmarl
    finally:
        if sys.__stdout__ is not None:
            sys.__stdout__.flush()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
        sys.stdout, sys.stderr = out, err
    return jaxmarl
