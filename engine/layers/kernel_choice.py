"""KernelChoice: which int8 matrix product each projection shape takes, by measurement.

Three paths give the same bits for an ``Int8Linear`` on CPU: our VNNI kernel
(``engine/kernels/cpu_kernels.cpp``), our AMX kernel (``engine/kernels/amx_kernels.cpp``,
the same integer sums on AMX tiles, where the CPU and the OS give them and the input
width is a multiple of 64), and ``quantization.int8_linear`` through ``torch._int_mm``,
oneDNN's int8 GEMM. All quantize a row's activations to 15 bits and sum in integers, then
apply the same float operations in the same order (``tests/engine/kernels`` checks bit
equality). Which is fastest depends on the CPU and on the number of rows, so at engine
start each distinct (in, out) shape is timed on every candidate for each row class,
interleaved, best of several rounds, and the result is cached per machine (CPU, flags,
threads, torch, kernel build). Because the paths are bit-identical, choosing by row count
keeps batch invariance: a token's result never depends on which path its batch took.

Not candidates: oneDNN bf16 (other bits, so a token's logits would depend on its batch's
size), and for int4 layers torch's int4pack kernel (bf16 activations, more error than
ours); both would need the quality gates of the tests to be run per machine instead.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch

from engine.errors import ConfigError
from engine.kernels.cpu_kernels import CpuKernels, cpu_flags, cpu_model, int_mm_is_fast, pack_int8
from engine.layers.quantization import int8_linear, quantize_int8
from engine.paths import cache_root

log = logging.getLogger(__name__)

PATHS = ("vnni", "int_mm", "amx")
MODES = ("measure", *PATHS)
# (name, the largest row count of the class, the rows timed for it), as
# quantization.row_class counts them
# One stream's decode (timed at 1 row) is its own class: there AMX pads a tile to 16
# rows and our VNNI kernel, bound by reading the weights, is faster; at 8 rows AMX wins.
ROW_CLASSES = (("1-3", 3, 1), ("4-8", 8, 6), ("9-64", 64, 32), ("65+", None, 256))
ROUNDS = 5
# Another path is taken only when clearly faster: where it is not, nothing may get slower
# (and torch's path keeps a second copy of the int8 weights in its own layout).
MARGIN = 0.9
_MIN_SAMPLE_S = 0.002  # a timed sample repeats the call until it lasts this long
_CACHE_FORMAT = 2
Shape = tuple[int, int]  # (in_features, out_features)


@dataclass(frozen=True)
class ShapeChoice:
    """The path of each row class for one shape, and the times that decided it."""

    paths: tuple[str, ...]  # one per ROW_CLASSES
    ms: tuple[dict[str, float], ...]  # per class: each candidate's best time, ms a call

    def describe(self) -> str:
        parts = []
        for (name, _, _), path, ms in zip(ROW_CLASSES, self.paths, self.ms, strict=True):
            times = ", ".join(f"{p} {t:.3f} ms" for p, t in ms.items())
            parts.append(f"{name} rows: {path}" + (f" ({times})" if times else ""))
        return "; ".join(parts)


class KernelChoice:
    """``choose(shapes)``: each shape's ShapeChoice, from the cache or timed now."""

    def __init__(
        self, mode: str = "measure", cache_dir: Path | None = None, ours_only: bool = False
    ) -> None:
        """``ours_only``: our kernels only (for the LM head, whose table torch's path
        would copy); a forced "int_mm" then gives our VNNI kernel."""
        if mode not in MODES:
            raise ConfigError(f"int8_kernel must be one of {MODES}, got {mode!r}")
        self.mode = mode
        found = self._candidates(mode)
        self.candidates = tuple(c for c in found if not ours_only or c != "int_mm")
        self.cache_dir = cache_dir if cache_dir is not None else cache_root() / "kernel_choice"
        self.timed_shapes = 0  # shapes this instance measured (not read from the cache)
        self.source = "forced" if mode != "measure" else "measured"

    @staticmethod
    def _candidates(mode: str) -> tuple[str, ...]:
        if mode == "amx" and not amx_ready():
            raise ConfigError(
                "int8_kernel='amx' needs AMX tiles (an Intel Xeon with amx_int8, Linux 5.16 "
                "or later) and our C++ kernels; use 'measure' to take the fastest path here"
            )
        if mode != "measure":
            return (mode,)
        found = []
        if CpuKernels.ops() is not None:
            found.append("vnni")
        if int_mm_is_fast():  # without AVX-512 BW torch._int_mm is a slow loop
            found.append("int_mm")
        if amx_ready():
            found.append("amx")
        return tuple(found)

    def choose(self, shapes: Iterable[Shape]) -> dict[Shape, ShapeChoice]:
        shapes = sorted(set(shapes))
        if len(self.candidates) < 2:
            only = self.candidates[0] if self.candidates else "vnni"
            none: tuple[dict[str, float], ...] = tuple({} for _ in ROW_CLASSES)
            return {
                s: ShapeChoice((only if fits(only, s) else "vnni",) * len(ROW_CLASSES), none)
                for s in shapes
            }
        cached = self._read()
        choices: dict[Shape, ShapeChoice] = {}
        for shape in shapes:
            key = f"{shape[0]}x{shape[1]}"
            if key in cached:
                entry = cached[key]
                choices[shape] = ShapeChoice(tuple(entry["paths"]), tuple(entry["ms"]))
                continue
            choices[shape] = self._time(shape)
            cached[key] = {"paths": list(choices[shape].paths), "ms": list(choices[shape].ms)}
            self.timed_shapes += 1
        if self.timed_shapes:
            self._write(cached)
        else:
            self.source = "cached"
        return choices

    def _time(self, shape: Shape) -> ShapeChoice:
        k, n = shape
        gen = torch.Generator().manual_seed(0)
        q, scales = quantize_int8(torch.randn(n, k, generator=gen))
        packed, rowsum, padded_scales, _ = pack_int8(q, scales, None)
        q_t = q.t().contiguous()
        ops = CpuKernels.k
        paths, times = [], []
        for _, _, rows in ROW_CLASSES:
            x = torch.randn(rows, k, generator=gen)
            calls: dict[str, Callable[[], torch.Tensor]] = {
                "vnni": partial(ops.int8_linear, x, packed, rowsum, padded_scales, None, n),
                "int_mm": partial(int8_linear, x, q_t, scales),
                "amx": partial(ops.int8_linear_amx, x, packed, rowsum, padded_scales, None, n),
            }
            best = _best_interleaved({p: calls[p] for p in self.candidates if fits(p, shape)})
            fastest = min(best, key=best.__getitem__)
            keep = "vnni" in best and fastest != "vnni" and best[fastest] >= MARGIN * best["vnni"]
            paths.append("vnni" if keep else fastest)
            times.append({p: round(t * 1e3, 4) for p, t in best.items()})
        return ShapeChoice(tuple(paths), tuple(times))

    # ---- the cache: one JSON file per machine key, shapes added as they are timed ----

    def _path(self) -> Path:
        kernels = CpuKernels.library_path.parent.name if CpuKernels.library_path else "none"
        ident = {
            "format": _CACHE_FORMAT,
            "cpu": cpu_model(),
            "flags": sorted(cpu_flags()),
            "threads": torch.get_num_threads(),
            "torch": torch.__version__,
            "kernels": kernels,
            "candidates": list(self.candidates),
            "margin": MARGIN,
        }
        digest = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]
        return self.cache_dir / f"{digest}.json"

    def _read(self) -> dict[str, dict]:
        try:
            data = json.loads(self._path().read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict[str, dict]) -> None:
        path = self._path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(suffix=".json", dir=path.parent)
            with os.fdopen(fd, "w") as f:
                json.dump(data, f, indent=1, sort_keys=True)
            os.replace(tmp, path)  # a concurrent engine reads the old file or the new
        except OSError as exc:  # a read-only cache costs the timing at the next start
            log.warning("kernel choice not cached (%s): timed again at the next start", exc)


def amx_ready() -> bool:
    """Whether our AMX kernel runs here: the C++ kernels loaded, the CPU has AMX int8
    and the OS granted this process the tile registers."""
    return CpuKernels.ops() is not None and bool(CpuKernels.k.amx_ready())


def fits(path: str, shape: Shape) -> bool:
    """Whether ``path`` takes a product of this (in, out) shape: the AMX kernel needs an
    input width that fills its tiles' depth."""
    return path != "amx" or shape[0] % 64 == 0


def _best_interleaved(calls: dict[str, Callable[[], torch.Tensor]]) -> dict[str, float]:
    """Each call's best time in seconds over ROUNDS rounds that alternate the calls."""
    reps = {}
    for name, call in calls.items():
        call()  # warm: first-call allocations, oneDNN's primitive cache
        start = time.perf_counter()
        call()
        once = max(time.perf_counter() - start, 1e-7)
        reps[name] = max(1, min(200, math.ceil(_MIN_SAMPLE_S / once)))
    best = dict.fromkeys(calls, math.inf)
    for _ in range(ROUNDS):
        for name, call in calls.items():
            start = time.perf_counter()
            for _ in range(reps[name]):
                call()
            best[name] = min(best[name], (time.perf_counter() - start) / reps[name])
    return best
