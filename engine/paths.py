"""Where the engine keeps its files and finds installed packages.

Below every other module (it imports none of them): the kernel build, the quantized
weights and the model store all cache under ``cache_root()``.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path


def cache_root() -> Path:
    """The cache directory: ``$R1VOICE_CACHE`` or ``~/.cache/r1voice``."""
    return Path(os.environ.get("R1VOICE_CACHE", Path.home() / ".cache" / "r1voice")).expanduser()


def package_dir(package: str) -> Path | None:
    """The directory of an installed package, or None when it is not installed."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))
