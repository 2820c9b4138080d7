"""The fuzz tests' budget: CI-sized and derandomized by default, GPUDML_FUZZ_EXAMPLES=N for
long runs; the examples per test and the count of cases tried (COUNTS)."""

from __future__ import annotations

import os
from collections import Counter

from hypothesis import HealthCheck, settings

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
