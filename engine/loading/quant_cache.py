"""The on-disk cache of a model's quantized tensors (QuantCache), checked before use."""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import os
import re
from pathlib import Path
from typing import Any

import torch

from engine.layers.quantization import CACHE_VERSION
from engine.paths import cache_root

log = logging.getLogger(__name__)


class QuantCache:
    """Quantized tensors of one model + method + group size, as one safetensors file
    memory-mapped on load, and beside it a manifest (``.json``) of its key, size and
    xxh3-128 digest, written last: a file without a manifest that matches it (cut short,
    altered, half-written) is never served, but deleted and made again.

    Next to the model (``<model>/quantized/``) when that directory is writable, else
    under ``cache_root()/quantized``; the key hashes the source weights' names, sizes
    and mtimes, the method, the group size and CACHE_VERSION (the layers' layout).
    ``source``: the GGUF the weights are read from (engine.loading.gguf_weights), keyed
    by its sha256 when the model's directory recorded it (``source_sha256``), else by its
    path, size and mtime; ``layout``: "vnni" when the tensors are our CPU kernels'
    packed layout.
    """

    def __init__(
        self,
        model_dir: Path,
        method: str,
        group_size: int,
        source: Path | None = None,
        layout: str = "",
        source_sha256: str | None = None,
    ) -> None:
        ident: list[Any] = [CACHE_VERSION, method, group_size if method == "int4" else 0]
        if source_sha256 is not None:
            ident += ["gguf-sha256", source_sha256, layout]
        elif source is not None:
            stat = source.stat()
            ident += ["gguf-1", str(source.resolve()), stat.st_size, stat.st_mtime_ns, layout]
        sources = sorted(model_dir.glob("*.safetensors"))
        ident += [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in sources]
        self.key = hashlib.sha256(json.dumps(ident).encode()).hexdigest()[:16]
        tag = method if method == "int8" else f"{method}-g{group_size}"
        self.tag = tag + (f"-{layout}" if layout else "")
        self.layout = layout
        name = f"{self.tag}-{self.key}.safetensors"
        local = model_dir / "quantized"
        writable = os.access(model_dir, os.W_OK) and (
            not local.exists() or os.access(local, os.W_OK)
        )
        if writable:
            self.path = local / name
        else:
            digest = hashlib.sha256(str(model_dir.resolve()).encode()).hexdigest()[:12]
            self.path = cache_root() / "quantized" / f"{model_dir.name}-{digest}" / name
        self.manifest = self.path.with_suffix(".json")

    def sibling(self, part: str) -> QuantCache:
        """The cache of tensors made from this one's (``part`` names them), under the same
        key: their own file and manifest beside it."""
        other = copy.copy(self)
        other.tag = f"{self.tag}-{part}"
        other.path = self.path.with_name(f"{other.tag}-{self.key}.safetensors")
        other.manifest = other.path.with_suffix(".json")
        return other

    def load(self) -> dict[str, torch.Tensor] | None:
        """The cached tensors (memory-mapped), or None: absent, or not what its manifest
        says (then deleted, so that this load makes it again)."""
        if not self.path.is_file():
            return None
        from safetensors.torch import load_file

        try:
            manifest = json.loads(self.manifest.read_text())
            size = self.path.stat().st_size
            if manifest.get("key") != self.key or manifest.get("size") != size:
                raise ValueError(f"{size} bytes where its manifest says {manifest.get('size')}")
            if manifest.get("xxh3_128") != file_digest(self.path):
                raise ValueError("its contents differ from its manifest's digest")
            return load_file(str(self.path))
        except Exception as exc:  # no manifest, cut short, altered: quantize again
            log.warning("not serving quantized cache %s (%s): making it again", self.path, exc)
            self.path.unlink(missing_ok=True)
            self.manifest.unlink(missing_ok=True)
            return None

    def save(self, tensors: dict[str, torch.Tensor]) -> None:
        """Write the file, then its manifest, each under a temporary name renamed into
        place; then delete this tag's files of other keys (a changed source or layout)."""
        from safetensors.torch import save_file

        tmp = self.path.with_name(self.path.name + f".tmp{os.getpid()}")
        tmp_manifest = self.manifest.with_name(self.manifest.name + f".tmp{os.getpid()}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            save_file({k: v.contiguous().cpu() for k, v in tensors.items()}, str(tmp))
            manifest = {"key": self.key, "size": tmp.stat().st_size, "xxh3_128": file_digest(tmp)}
            tmp.replace(self.path)
            tmp_manifest.write_text(json.dumps(manifest))
            tmp_manifest.replace(self.manifest)
        except OSError as exc:  # a read-only cache is slower, not wrong
            log.warning("cannot write quantized cache %s: %s", self.path, exc)
            return
        finally:
            tmp.unlink(missing_ok=True)
            tmp_manifest.unlink(missing_ok=True)
        own = re.compile(rf"{re.escape(self.tag)}-([0-9a-f]{{16}})\.(safetensors|json)")
        for stale in self.path.parent.iterdir():
            match = own.fullmatch(stale.name)
            if match is not None and match[1] != self.key:
                stale.unlink(missing_ok=True)


def file_digest(path: Path) -> str:
    """xxh3-128 of a file's bytes (memory bandwidth: a fraction of a second a GB)."""
    import mmap

    import xxhash

    digest = xxhash.xxh3_128()
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        view = memoryview(m)
        try:
            for i in range(0, len(view), 1 << 24):
                digest.update(view[i : i + (1 << 24)])
        finally:
            view.release()
    return digest.hexdigest()
