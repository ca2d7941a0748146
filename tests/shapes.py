"""Shape-setting arguments of property tests, in two tiers.

Every new array shape is a new compiled program, so a property test that draws its sizes
compiles once per example. Such a test takes `vary` from `SHAPES` and draws its sizes with
`size`: the default tier runs it at one fixed shape (the values, seeds and actions still
drawn), the `slow` tier over the whole range of shapes.
"""

import pytest
from hypothesis import strategies as st

SHAPES = [
    pytest.param(False, id="one-shape"),
    pytest.param(True, id="any-shape", marks=pytest.mark.slow),
]


def size(data: st.DataObject, vary: bool, strategy: st.SearchStrategy, fixed: object) -> object:
    """`strategy`'s draw where shapes vary, else `fixed` (one program for every example)."""
    return data.draw(strategy if vary else st.just(fixed))
