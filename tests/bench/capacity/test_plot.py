"""`bench capacity --plot`: a PNG."""

from __future__ import annotations

import struct
from pathlib import Path

from bench.capacity.plot import plot


def test_the_plot_is_a_png(tmp_path: Path) -> None:
    levels = [
        {"sessions": n, "voice_to_voice_ms": {"p50": 500.0 * n, "p95": 800.0 * n}}
        for n in (1, 2, 4)
    ]
    path = plot({"r1voice": levels}, str(tmp_path / "capacity.png"), 1500.0)
    assert path is not None
    assert Path(path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", Path(path).read_bytes()[16:24])
    assert width > 300 and height > 200
