"""Sizes kept: no source file in app/, engine/, bench/ or web/ over 300 lines, so a file
that grows past one concern is split when it does, not later. A file near the cap is
split by concern (see how app/llm/remote.py and remote_wire.py divide), never squeezed.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("app", "engine", "bench", "web")
SUFFIXES = {".py", ".js", ".mjs", ".cpp", ".h", ".css", ".html"}
MAX_LINES = 300


def oversized(root: Path, folders: tuple[str, ...] = FOLDERS) -> dict[str, int]:
    """The source files under `folders` of `root` over MAX_LINES, with their line counts."""
    found = {}
    for folder in folders:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix in SUFFIXES and path.is_file() and "__pycache__" not in path.parts:
                lines = len(path.read_text(encoding="utf-8").splitlines())
                if lines > MAX_LINES:
                    found[str(path.relative_to(root))] = lines
    return found


def test_the_check_counts_lines_of_every_kind_of_source(tmp_path: Path) -> None:
    (tmp_path / "app" / "deep").mkdir(parents=True)
    (tmp_path / "web").mkdir()
    (tmp_path / "app" / "deep" / "big.py").write_text("x = 1\n" * 301)
    (tmp_path / "app" / "fits.py").write_text("x = 1\n" * 300)
    (tmp_path / "web" / "big.css").write_text("a {}\n" * 400)
    (tmp_path / "web" / "notes.txt").write_text("a\n" * 400)  # not source
    assert oversized(tmp_path, ("app", "web")) == {"app/deep/big.py": 301, "web/big.css": 400}


def test_no_source_file_is_over_300_lines() -> None:
    found = oversized(ROOT)
    assert not found, f"split these by concern (at most {MAX_LINES} lines each): {found}"
