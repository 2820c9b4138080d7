"""gpudml's version (pyproject.toml's): the package's __version__, and part of the key of the
autotuner's cache (device/tuning.py)."""

__version__ = "0.1.0"
