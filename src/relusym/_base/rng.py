"""The one rule for random number generators in relusym.

Every function that takes ``rng=`` accepts:

* an ``int`` seed: the same results on every run;
* a ``numpy.random.Generator``: used as is (it advances);
* a ``random.Random``: used as is for code drawn with the standard library; for numpy code a Generator is seeded
  from it (it advances);
* ``None``: fresh entropy from the operating system, so every run differs.

Searches whose *result* must be reproducible by default (the flip search, counterexample placement) take an explicit
default seed in their signature instead of ``None``.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

__all__ = ["as_generator", "as_random", "RNGLike"]

RNGLike = int | np.random.Generator | random.Random | None


def _check(rng: Any) -> None:
    if isinstance(rng, bool) or (rng is not None and not isinstance(rng, int | np.random.Generator | random.Random)):
        raise TypeError(
            f"rng must be an int seed, a numpy.random.Generator, a random.Random or None, got {type(rng).__name__}"
        )


def as_generator(rng: RNGLike) -> np.random.Generator:
    """A numpy Generator following the rule of this module."""
    _check(rng)
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, random.Random):
        return np.random.default_rng(rng.getrandbits(128))
    return np.random.default_rng(rng)


def as_random(rng: RNGLike) -> random.Random:
    """A ``random.Random`` following the rule of this module."""
    _check(rng)
    if isinstance(rng, random.Random):
        return rng
    if isinstance(rng, np.random.Generator):
        return random.Random(int(rng.integers(0, 2**63)))
    return random.Random(rng)
