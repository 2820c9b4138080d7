"""The fuzz tests' budget: CI-sized and derandomized by default, GPUDML_FUZZ_EXAMPLES=N for
long runs; the examples per test and the count of cases tried (COUNTS)."""

from __future__ import annotations

import os
import zlib
from collections import Counter

from hypothesis import HealthCheck, seed, settings

#: Cases tried per operator and kind (GPUDML_FUZZ_REPORT=file.json writes them).
COUNTS: Counter = Counter()
#: Default examples per fuzz test (per operator, and per adapter where a test runs on each).
VALID_EXAMPLES, INVALID_EXAMPLES, EXECUTE_EXAMPLES, FUNCTIONAL_EXAMPLES = 100, 250, 100, 60


def long_run() -> int | None:
    """GPUDML_FUZZ_EXAMPLES as a number of examples, or None (the default, CI-sized run)."""
    value = os.environ.get("GPUDML_FUZZ_EXAMPLES")
    return int(value) if value else None


def budget(examples: int) -> settings:
    """CI-sized and derandomized by default; GPUDML_FUZZ_EXAMPLES=N: N random examples."""
    n = long_run()
    return settings(
        max_examples=n or examples,
        deadline=None,
        derandomize=n is None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


def split_budget(examples: int, adapter: str, adapters, key: str, least: int = 10):
    """A fuzz test that runs on every adapter: in the default run each adapter tries its own
    share of `examples` (rounded up), drawn from a stream of its own (seeded by the rule's
    `key` and the adapter, derandomized), so that the adapters together try as many distinct
    descriptions as one adapter tried before and each compiles half the kernels. Each
    adapter's paths (GL's emulated 16- and 64-bit types, Vulkan's subgroups) still meet
    every kind of case the rule draws. One adapter selected, a share below `least` examples
    (a light rule's few), or GPUDML_FUZZ_EXAMPLES=N: every adapter tries all of them (N fresh
    random examples in a long run)."""
    adapters = list(adapters)
    if long_run() is not None or adapter not in adapters or examples < least * max(2, len(adapters)):
        return budget(examples)
    share = budget(-(-examples // len(adapters)))

    def apply(test):
        return seed(zlib.crc32(f"{key}/{adapter}".encode()))(share(test))
    return apply


def split_cases(cases: int, group: int, adapter: str, adapters) -> list[int]:
    """The case numbers of `range(cases)` that `adapter` runs: whole groups of `group`
    consecutive cases (a group meets every layout) dealt to the adapters in turn, so that
    the adapters together run every case once; one adapter selected, or a count of cases
    below two groups: every case on every adapter."""
    adapters = list(adapters)
    if len(adapters) < 2 or adapter not in adapters or cases < 2 * group:
        return list(range(cases))
    index = adapters.index(adapter)
    return [c for c in range(cases) if (c // group) % len(adapters) == index]
