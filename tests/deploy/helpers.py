"""What the deployment-file tests share: the repo root, our CLI and settings."""

from __future__ import annotations

import dataclasses
import re
import shlex
from pathlib import Path
from typing import Any

from app.cli import build_parser
from app.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = {f"R1VOICE_{f.name.upper()}" for f in dataclasses.fields(Settings)}
ENTRYPOINT_VARS = {"R1VOICE_HF_MODEL", "R1VOICE_ALLOW_DOWNLOAD"}  # docker/entrypoint.sh


def check_cli(argv: list[str]) -> None:
    """`argv` (after the word r1voice) is a command our CLI accepts."""
    try:
        build_parser().parse_args(argv)
    except SystemExit as exc:
        raise AssertionError(f"r1voice {' '.join(argv)}: not a valid command") from exc


def r1voice_commands(text: str) -> list[list[str]]:
    """Every command (in a shell string) whose program is r1voice or /.../bin/r1voice."""
    found = []
    for part in re.split(r"&&|;|\|\||\n", text):
        words = part.split()
        if words and words[0] == "exec":
            words = words[1:]
        if words and (words[0] == "r1voice" or words[0].endswith("/bin/r1voice")):
            found.append([w for w in shlex.split(" ".join(words[1:])) if w != "$@"])
    return found


def check_env(names: Any) -> None:
    """Every R1VOICE_* name is a setting (or one the GPU image's entrypoint reads)."""
    unknown = {n for n in names if n.startswith("R1VOICE_")} - SETTINGS - ENTRYPOINT_VARS
    assert not unknown, f"not r1voice settings: {sorted(unknown)}"
