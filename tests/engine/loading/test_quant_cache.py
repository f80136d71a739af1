"""The quantized cache a start reads instead of the GGUF: bit-identical to loading from
the file, keyed by the GGUF's sha256, and never served when cut short or altered."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch

from engine.layers.quantization import Int8Linear
from engine.loading.gguf_file import GGUFFile
from engine.loading.model_store import GGUF_SOURCE, gguf_sha256, gguf_source
from engine.loading.quant_cache import QuantCache, file_digest
from tests.engine.loading.test_gguf_weights import _cache_path, _loaded, gguf_model

pytest.importorskip("gguf")


def _tensors(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """What the forward pass reads: each module's own parameters and buffers, or for one
    packed for our kernels that layout (an int4 one loaded packed leaves its unpacked
    scales and mins unset: nothing reads them) and an int8 one's scales (int_mm's)."""
    out: dict[str, torch.Tensor] = {}
    for name, module in model.named_modules():
        vnni = getattr(module, "vnni", None)
        if vnni is not None:
            out |= {f"{name}.vnni{i}": t for i, t in enumerate(vnni) if t is not None}
            if isinstance(module, Int8Linear):
                out[f"{name}.scales"] = module.scales
            continue
        tensors = [*module.named_parameters(recurse=False), *module.named_buffers(recurse=False)]
        out |= {f"{name}.{k}": v for k, v in tensors}
    return out


def _read_count(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times a GGUF is opened from now on."""
    opened = [0]
    real = GGUFFile.__init__

    def counting(self: Any, *args: Any) -> None:
        opened[0] += 1
        real(self, *args)

    monkeypatch.setattr(GGUFFile, "__init__", counting)
    return opened


@pytest.mark.parametrize("method", ["int8", "int4"])
def test_a_cached_load_is_bit_identical_to_the_load_from_the_gguf(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    model_dir, _ = gguf_model(tmp_path, "qwen2")
    opened = _read_count(monkeypatch)
    fresh = _tensors(_loaded(model_dir, method))
    cached = _tensors(_loaded(model_dir, method))
    assert opened[0] == 1  # the second load read the cache only
    assert fresh.keys() == cached.keys() and len(fresh) > 10
    for name, tensor in fresh.items():
        assert tensor.dtype == cached[name].dtype, name
        assert torch.equal(tensor, cached[name]), name


@pytest.mark.parametrize("damage", ["truncated", "altered", "no manifest", "other manifest"])
def test_a_damaged_cache_is_made_again_never_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    model_dir, _ = gguf_model(tmp_path, "qwen2")
    want = _tensors(_loaded(model_dir, "int8"))
    path = gguf_source(model_dir)
    assert path is not None
    cache = _cache_path(model_dir, path)
    manifest = cache.with_suffix(".json")
    data = bytearray(cache.read_bytes())
    if damage == "truncated":
        cache.write_bytes(data[: len(data) - 4096])
    elif damage == "altered":  # one byte of the last tensor's data: the header still parses
        data[-3] ^= 0x5A
        cache.write_bytes(bytes(data))
    elif damage == "no manifest":
        manifest.unlink()
    else:
        manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "key": "0" * 16}))
    opened = _read_count(monkeypatch)
    got = _tensors(_loaded(model_dir, "int8"))
    assert opened[0] == 1  # read from the GGUF again, not from the damaged file
    assert all(torch.equal(v, got[k]) for k, v in want.items())
    written = json.loads(manifest.read_text())
    assert written["size"] == cache.stat().st_size and written["xxh3_128"] == file_digest(cache)
    assert sorted(p.name for p in cache.parent.iterdir()) == [manifest.name, cache.name]


def test_the_key_is_the_gguf_sha256_when_recorded_and_old_keys_are_removed(
    tmp_path: Path,
) -> None:
    model_dir, _ = gguf_model(tmp_path, "qwen2")
    path = gguf_source(model_dir)
    assert path is not None and gguf_sha256(model_dir) is None
    by_path = QuantCache(model_dir, "int8", 128, path)
    by_path.save({"x": torch.arange(4)})
    source = json.loads((model_dir / GGUF_SOURCE).read_text())
    (model_dir / GGUF_SOURCE).write_text(json.dumps({**source, "sha256": "ab" * 32}))
    moved = tmp_path / "elsewhere.gguf"
    shutil.copy2(path, moved)
    by_sha = QuantCache(model_dir, "int8", 128, path, source_sha256=gguf_sha256(model_dir))
    assert by_sha.key != by_path.key
    assert QuantCache(model_dir, "int8", 128, moved, source_sha256="ab" * 32).key == by_sha.key
    assert QuantCache(model_dir, "int8", 128, path, source_sha256="cd" * 32).key != by_sha.key
    by_sha.save({"x": torch.arange(4)})
    names = sorted(p.name for p in by_sha.path.parent.iterdir())
    assert names == [by_sha.manifest.name, by_sha.path.name]  # the path-keyed pair is gone
    loaded = by_sha.load()
    assert loaded is not None and torch.equal(loaded["x"], torch.arange(4))


def test_the_int_mm_paths_transposed_weights_are_cached_bit_identical(tmp_path: Path) -> None:
    """A start on the int_mm path read its transposed weights from a cache beside the
    packed one, equal to those made from the packed layout, and answers the same."""
    from engine import LLM, SamplingParams

    model_dir, _ = gguf_model(tmp_path, "qwen2")
    path = gguf_source(model_dir)
    assert path is not None
    params = SamplingParams(max_tokens=6, temperature=0, ignore_eos=True)
    first = LLM(str(model_dir), quantization="int8", int8_kernel="int_mm")
    made = {n: m.weight_t for n, m in first.model.named_modules() if hasattr(m, "weight_t")}
    sibling = QuantCache(model_dir, "int8", 128, path, "vnni").sibling("int_mm")
    if not sibling.path.is_file():
        pytest.skip("no packed layout here (our CPU kernels are not built)")
    second = LLM(str(model_dir), quantization="int8", int8_kernel="int_mm")
    read = {n: m.weight_t for n, m in second.model.named_modules() if hasattr(m, "weight_t")}
    assert made.keys() == read.keys() and any(t is not None for t in made.values())
    for name, tensor in made.items():
        if tensor is not None:
            assert torch.equal(tensor, read[name]), name
    assert [o.token_ids for o in first.generate([[5, 9, 3]], params)] == [
        o.token_ids for o in second.generate([[5, 9, 3]], params)
    ]
