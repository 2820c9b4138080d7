"""Where a rule's choices come from (`Draw`: `RandomDraw` for the sweeps, `HypothesisDraw`
for the fuzz tests), and the kit's constants of types, levels and sizes."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import gpudml as dml

FL, T, D = dml.FeatureLevel, dml.DataType, dml.AxisDirection
ALL_TYPES = list(T)
HIGHEST = dml.types.HIGHEST_FEATURE_LEVEL
#: Largest size per axis by rank: at most a few thousand elements per tensor.
MAX_SIZE = {1: 300, 2: 40, 3: 14, 4: 7, 5: 5, 6: 4, 7: 3, 8: 3}


class Draw:
    """Where a rule's choices come from: `RandomDraw` (a seeded numpy generator: the sweeps,
    the feature-level tables, random graphs) or `HypothesisDraw` (the fuzz tests)."""

    def int(self, lo: int, hi: int) -> int:
        """An integer in [lo, hi]."""
        raise NotImplementedError

    def pick(self, options):
        """One of `options` (a sequence)."""
        raise NotImplementedError

    def real(self, lo: float | None = None, hi: float | None = None) -> float:
        """A float in [lo, hi]; without bounds any double (NaN, infinities, -0.0 included)."""
        raise NotImplementedError

    def permutation(self, n: int) -> list[int]:
        raise NotImplementedError

    def bool(self) -> bool:
        return self.int(0, 1) == 1

    def ints(self, count: int, lo: int, hi: int) -> list[int]:
        return [self.int(lo, hi) for _ in range(count)]

    def subset(self, n: int) -> list[int]:
        """A non-empty list of distinct integers of [0, n), in random order."""
        order = self.permutation(n)
        return order[:self.int(1, n)]


class RandomDraw(Draw):
    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def int(self, lo, hi):
        if -(2**63) <= lo and hi < 2**63 - 1:
            return int(self.rng.integers(lo, hi + 1))
        span = hi - lo + 1  # beyond int64: from random bytes
        return lo + int.from_bytes(self.rng.bytes(span.bit_length() // 8 + 8), "little") % span

    def pick(self, options):
        options = list(options)
        return options[int(self.rng.integers(len(options)))]

    def real(self, lo=None, hi=None):
        if lo is None:
            return float(self.rng.integers(0, 256, 8, dtype=np.uint8).view(np.float64)[0])
        return float(self.rng.uniform(lo, hi))

    def permutation(self, n):
        return [int(v) for v in self.rng.permutation(n)]


class HypothesisDraw(Draw):
    def __init__(self, draw):
        self.draw = draw

    def int(self, lo, hi):
        return self.draw(st.integers(lo, hi))

    def pick(self, options):
        return self.draw(st.sampled_from(list(options)))

    def real(self, lo=None, hi=None):
        if lo is None:
            return self.draw(st.floats(allow_nan=True, allow_infinity=True))
        return self.draw(st.floats(lo, hi))

    def permutation(self, n):
        return list(self.draw(st.permutations(range(n))))
