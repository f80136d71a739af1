"""CpuKernels: our C++ CPU kernels (engine/kernels/*.cpp), built once and cached on disk.

The kernels need AVX-512 (F, BW, VL, DQ), VNNI and FMA; they are compiled with g++ against the
installed torch the first time an engine wants them, into
``cache_root()/kernels/<hash of source, flags and torch version>/``, and loaded with
``torch.ops.load_library`` (no ninja, no pybind11: a TORCH_LIBRARY registration). When
the CPU lacks the instructions, g++ is missing and no library was built before (an
image's build stage builds it: ``python -m engine.kernels``), the build fails, or
``R1VOICE_CPU_KERNELS=0``, ``CpuKernels.ops()`` is None, a warning says why (once), and
the engine uses its torch-only kernels, which compute the same results.
"""

from __future__ import annotations

import hashlib
import logging
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch

from engine.paths import cache_root

log = logging.getLogger(__name__)

_DIR = Path(__file__).parent
SOURCES = [
    _DIR / n
    for n in (
        "cpu_kernels.cpp",
        "amx_kernels.cpp",
        "int4_kernels.cpp",
        "layer_kernels.cpp",
        "paged_kv_kernels.cpp",
        "rope_cache_kernels.cpp",
    )
]
# Every header is part of the build's cache key (CpuKernels.build hashes them).
HEADERS = sorted(_DIR.glob("*.h"))
OPS = (
    "int8_linear",
    "int8_linear_amx",
    "amx_ready",
    "amx_bf16_ready",
    "pack_int8",
    "int4_linear",
    "rms_norm_residual",
    "silu_and_mul",
    "rope_and_cache",
    "paged_decode_attention",
    "argmax_rows",
)
# paged_decode_attention's bf16 mask (EngineConfig.attention_bf16); BF16_TILES: both
# on AMX-BF16 tiles
BF16_SCORES, BF16_VALUES, BF16_TILES = 1, 2, 4
# every instruction set CXX_FLAGS compiles for: a library built on one host may be loaded
# on another (an image)
REQUIRED_FLAGS = ("avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni", "fma")
CXX_FLAGS = [
    "-O3",
    "-ffp-contract=off",  # no FMA contraction: the same float rounding as the torch path
    "-std=c++17",
    "-shared",
    "-fPIC",
    "-fopenmp",  # at::parallel_for's OpenMP; resolves to the libgomp torch already loaded
    "-mavx512f",
    "-mavx512bw",
    "-mavx512vl",
    "-mavx512dq",
    "-mavx512vnni",
    "-mfma",
]


class CpuKernels:
    """Process-wide state of the C++ kernels: ``CpuKernels.ops()`` or None."""

    _lock = threading.Lock()
    _ops: Any = None
    _tried = False
    # Engines built while False use the torch kernels (benchmarks compare both in one
    # process); modules decide when they are prepared, so engines built before keep theirs.
    enabled = True
    build_seconds: float | None = None  # set when this process compiled them
    library_path: Path | None = None
    # The ops' default overloads, bound once: calling an OpOverload skips the packet's
    # overload resolution, and calling its C++ callable skips OpOverload.__call__'s
    # Python frame (microseconds count: a token makes hundreds of kernel calls).
    k: Any = None

    @classmethod
    def ops(cls) -> Any:
        """``torch.ops.r1voice`` for a module being prepared now, else None."""
        return cls.lib() if cls.enabled else None

    @classmethod
    def lib(cls) -> Any:
        """``torch.ops.r1voice`` once loaded (built if needed), else None."""
        if not cls._tried:
            with cls._lock:
                if not cls._tried:
                    cls._ops = cls._load()
                    cls._tried = True
        return cls._ops

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """Why the kernels cannot be used here (None: they can be tried)."""
        if os.environ.get("R1VOICE_CPU_KERNELS", "1") == "0":
            return "R1VOICE_CPU_KERNELS=0"
        missing = [f for f in REQUIRED_FLAGS if f not in cpu_flags()]
        if missing:
            return f"the CPU lacks {', '.join(missing)}"
        if _compiler() is None:
            try:
                library = cls.library()
            except Exception as exc:  # unreadable sources, torch's build helpers missing
                return f"no C++ compiler, and no library to look for ({exc})"
            if not library.is_file():
                return (
                    "no C++ compiler (g++; `make install` installs build-essential) and no "
                    f"library built before for these sources and this torch in {library.parent}"
                    " (`python -m engine.kernels` where g++ is builds it there)"
                )
        return None

    @classmethod
    def _load(cls) -> Any:
        reason = cls.unavailable_reason()
        if reason is not None:
            if reason != "R1VOICE_CPU_KERNELS=0":
                log.warning("C++ CPU kernels off (%s): using torch kernels (slower)", reason)
            return None
        try:
            path = cls.build()
            torch.ops.load_library(str(path))
            cls.library_path = path
            ops = torch.ops.r1voice
            cls.k = SimpleNamespace(**{name: _bound(getattr(ops, name).default) for name in OPS})
            return ops
        except Exception as exc:  # a failed build must never stop the engine
            log.warning("C++ CPU kernels unavailable (%s): using torch kernels (slower)", exc)
            return None

    @classmethod
    def library(cls) -> Path:
        """Where the library of these sources, flags and torch is cached (built or not).
        The compiler is not part of the key: an image's build stage compiles it and its
        runtime, which has no g++, loads it (docker/Dockerfile.cpu)."""
        ident = hashlib.sha256()
        for src in [*SOURCES, *HEADERS]:
            ident.update(src.read_bytes())
        ident.update(" ".join([*CXX_FLAGS, *_torch_flags()]).encode() + torch.__version__.encode())
        return cache_root() / "kernels" / ident.hexdigest()[:16] / "r1voice_cpu_kernels.so"

    @classmethod
    def build(cls) -> Path:
        """The compiled library, built now unless the cache already holds it. Compiling
        needs g++, not the CPU's instructions (loading does)."""
        library = cls.library()
        if library.is_file():
            return library
        cxx = _compiler()
        if cxx is None:
            raise RuntimeError("no C++ compiler (g++) to build the CPU kernels with")
        command = [cxx, *CXX_FLAGS, *_torch_flags()]
        out_dir = library.parent
        out_dir.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        # Build into a temporary name, then rename: a concurrent engine never loads half
        # a file.
        fd, tmp = tempfile.mkstemp(suffix=".so", dir=out_dir)
        os.close(fd)
        try:
            result = subprocess.run(
                [*command[:1], *[str(s) for s in SOURCES], "-o", tmp, *command[1:]],
                capture_output=True,
                text=True,
                timeout=600,
            )
            if result.returncode != 0:
                raise RuntimeError(f"g++ failed: {result.stderr.strip()[-2000:]}")
            # mkstemp's 0600: another user (a container run as another UID) could not load it
            os.chmod(tmp, 0o755)
            os.replace(tmp, library)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        cls.build_seconds = time.monotonic() - start
        log.info("built C++ CPU kernels in %.1f s: %s", cls.build_seconds, library)
        return library


def _bound(overload: Any) -> Any:
    """The overload's C++ callable (same dispatch, no Python frame), else the overload."""
    op = getattr(overload, "_op", None)
    return op if callable(op) else overload


def int_mm_is_fast() -> bool:
    """Whether ``torch._int_mm`` on this CPU runs oneDNN's AVX-512 int8 GEMM. Without
    AVX-512 BW (or with oneDNN held below it by ``ONEDNN_MAX_CPU_ISA``), it is a slow
    path that measured several times the fp32 product's time."""
    held = os.environ.get("ONEDNN_MAX_CPU_ISA", "").upper()
    return "avx512bw" in cpu_flags() and not held.startswith(("SSE", "AVX2", "AVX_"))


def cpu_flags() -> set[str]:
    """The CPU's feature flags from /proc/cpuinfo (empty where there is none)."""
    return set(_cpuinfo("flags").split())


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else what the platform says."""
    return _cpuinfo("model name") or platform.processor()


def _cpuinfo(field: str) -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(field):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def _compiler() -> str | None:
    return os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")


def _torch_flags() -> list[str]:
    from torch.utils import cpp_extension

    flags = [f"-I{p}" for p in cpp_extension.include_paths()]
    flags += [f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}"]
    flags += [f"-I{Path(sys.base_prefix) / 'include'}"]
    for lib in cpp_extension.library_paths():
        flags += [f"-L{lib}", f"-Wl,-rpath,{lib}"]
    return [*flags, "-lc10", "-ltorch_cpu"]


def pack_int8(
    q: torch.Tensor, scales: torch.Tensor, bias: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """int8 q [n, k] -> the layout ``r1voice::int8_linear`` reads: (packed
    [n/16, k/4, 16, 4], rowsum int32, scales, bias), n padded to 16 and k to 4 with zeros."""
    n, k = q.shape
    np_ = -(-n // 16) * 16
    if CpuKernels.k is not None:  # one C++ pass: the torch form below took seconds a model
        packed, rowsum = CpuKernels.k.pack_int8(q)
    else:
        kp = -(-k // 4) * 4
        padded = torch.zeros(np_, kp, dtype=torch.int8)
        padded[:n, :k] = q
        packed = padded.view(np_ // 16, 16, kp // 4, 4).permute(0, 2, 1, 3).contiguous()
        rowsum = padded.sum(dim=1, dtype=torch.int32)

    def pad(t: torch.Tensor) -> torch.Tensor:
        out = torch.zeros(np_, dtype=torch.float32)
        out[:n] = t.float()
        return out

    return packed, rowsum, pad(scales), None if bias is None else pad(bias)


def pack_int4(
    q: torch.Tensor, scales: torch.Tensor, mins: torch.Tensor, bias: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """int4 q [n, k] (values 0..15), scales and mins [n, k/g] -> the layout
    ``r1voice::int4_linear`` reads (see int4_kernels.cpp), n padded to 16 with zeros;
    scales and mins in fp16, as llama.cpp's Q4_1 keeps them."""
    n, k = q.shape
    np_, groups = -(-n // 16) * 16, scales.shape[1]
    padded = torch.zeros(np_, k, dtype=torch.uint8)
    padded[:n] = q.to(torch.uint8)
    v = padded.view(np_ // 16, 16, k // 8, 2, 4)
    packed = (v[:, :, :, 0] | (v[:, :, :, 1] << 4)).permute(0, 2, 1, 3).contiguous()

    def per_block(t: torch.Tensor) -> torch.Tensor:
        out = torch.zeros(np_, groups, dtype=torch.float32)
        out[:n] = t.float()
        return out.view(np_ // 16, 16, groups).permute(0, 2, 1).to(torch.float16).contiguous()

    b = None
    if bias is not None:
        b = torch.zeros(np_, dtype=torch.float32)
        b[:n] = bias.float()
    return packed, per_block(scales), per_block(mins), b
