"""Error classes of the public API (API.md section 4)."""


class DMLError(Exception):
    """Base class of every error gpudml raises on purpose."""


class InvalidArgumentError(DMLError, ValueError):
    """What DirectML rejects with E_INVALIDARG: names the field, the rule and the values."""


class UnsupportedError(DMLError, NotImplementedError):
    """A valid description that the chosen adapter cannot run."""
