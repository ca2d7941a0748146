import os
import sys

# tests import their helpers (mpe_reference) as plain modules
sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

from marl.runtime import configure_xla  # noqa: E402

configure_xla()  # before any test initialises a JAX backend
