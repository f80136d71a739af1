"""CTranslate2 (faster-whisper) on its own OpenMP runtime, not PyTorch's.

Both wheels bundle a libgomp. PyTorch loads its copy into the process's global symbol
scope (torch's `_load_global_deps`, RTLD_GLOBAL), so a libctranslate2 loaded the usual
way binds its GOMP_* calls to PyTorch's copy at its first call. Whisper's thread teams
then count among the threads that runtime manages, and once it manages more threads than
the machine has CPUs, libgomp shortens every barrier's spin from some milliseconds to
100 iterations (its "throttled" spin): each of the LLM engine's parallel regions then
ends with its threads asleep on a futex, woken for the next one, and each token takes
longer (docs/benchmarks.md, "The server's own threads").

Loading libctranslate2 first with RTLD_DEEPBIND binds its symbols to its own
dependencies before the global scope: its bundled libgomp, whose threads PyTorch's
runtime never counts. This must run before the first `import ctranslate2` (or
faster_whisper) in the process; `app.speech` runs it on import, ahead of its modules.

Whisper's own runtime gets GOMP_SPINCOUNT=100 (read once, by its constructor, while the
preload runs; a value the user set is kept): its threads spin at a barrier as briefly as
they did in PyTorch's throttled runtime, and do not busy-wait on a core the LLM decodes on.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
from pathlib import Path

_handle: ctypes.CDLL | None = None
WHISPER_SPINCOUNT = "100"  # libgomp's own throttled spin (see above)


def ctranslate2_library() -> Path | None:
    """The libctranslate2 shared library the installed `ctranslate2` wheel loads, or None
    when there is none to find (no wheel, or a build that links it elsewhere)."""
    spec = importlib.util.find_spec("ctranslate2")
    if spec is None or not spec.submodule_search_locations:
        return None
    package = Path(next(iter(spec.submodule_search_locations)))
    # auditwheel's folder beside the package ("ctranslate2.libs"), or the package itself
    found = sorted(package.parent.glob("ctranslate2.libs/libctranslate2*.so*"))
    found = found or sorted(package.glob("libctranslate2*.so*"))
    return found[0] if found else None


def isolate_ctranslate2_openmp() -> bool:
    """Preload libctranslate2 bound to its own libgomp (see the module's docstring).
    False when it cannot: ctranslate2 was imported already (its bindings are made), no
    library is found or loads, or the platform has no RTLD_DEEPBIND (nothing changes)."""
    global _handle
    if _handle is not None:
        return True
    deepbind = getattr(os, "RTLD_DEEPBIND", None)
    if deepbind is None or "ctranslate2" in sys.modules:
        return False
    library = ctranslate2_library()
    if library is None:
        return False
    spin_set = "GOMP_SPINCOUNT" not in os.environ
    if spin_set:
        os.environ["GOMP_SPINCOUNT"] = WHISPER_SPINCOUNT
    try:
        _handle = ctypes.CDLL(str(library), mode=deepbind | os.RTLD_LOCAL | os.RTLD_NOW)
    except OSError:  # not loadable this way: ctranslate2's own import reports why, if at all
        return False
    finally:
        if spin_set:
            del os.environ["GOMP_SPINCOUNT"]
    return True
