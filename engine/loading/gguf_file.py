"""GGUFFile: a GGUF's tensors, one at a time, memory-mapped.

The header is parsed here rather than by ``gguf.GGUFReader``, which decodes every
metadata value (a 151,936-token vocabulary and its merges) in Python and took tens of
seconds on a 1.5B model; the loader needs only the architecture, the alignment and the
tensor table. A tensor is dequantized on its own (``dequantize``), or read as the int4
groups of 32 it already is (``int4_groups``: Q4_K's sub-blocks, Q4_0, Q4_1), so that no
whole fp32 model is ever built.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from engine.errors import ModelLoadError

# The tensor types the engine reads; the 4-bit ones map onto its int4 groups of 32 exactly.
INT4_EXACT = ("Q4_K", "Q4_0", "Q4_1")
FLOAT_TYPES = ("F32", "F16", "BF16")
SUPPORTED = (*FLOAT_TYPES, *INT4_EXACT, "Q5_0", "Q5_1", "Q5_K", "Q6_K", "Q8_0")
GROUP = 32
_NUMPY = {"F32": np.float32, "F16": np.float16, "BF16": np.int16}  # bf16's bits, viewed later
# Metadata value types (the GGUF spec): struct formats of the fixed-size ones.
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q"}
_SCALARS[12] = "d"
_STRING, _ARRAY = 8, 9


@dataclass(frozen=True)
class GGUFTensor:
    name: str
    type_name: str  # gguf.GGMLQuantizationType's name: "Q4_K", "F32", ...
    shape: tuple[int, ...]  # rows first, as torch (the file stores the reverse)
    data: np.ndarray  # the raw bytes, [rows, bytes per row]


class _Cursor:
    def __init__(self, buf: memoryview) -> None:
        self.buf, self.pos = buf, 0

    def unpack(self, fmt: str) -> tuple[Any, ...]:
        values = struct.unpack_from("<" + fmt, self.buf, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values

    def string(self) -> str:
        (n,) = self.unpack("Q")
        text = bytes(self.buf[self.pos : self.pos + n]).decode("utf-8", "replace")
        self.pos += n
        return text

    def value(self, kind: int) -> Any:
        """One metadata value; arrays are skipped (None): the loader needs none of them."""
        if kind in _SCALARS:
            return self.unpack(_SCALARS[kind])[0]
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            elem, count = self.unpack("IQ")
            if elem in _SCALARS:
                self.pos += struct.calcsize("<" + _SCALARS[elem]) * count
            else:
                for _ in range(count):
                    self.value(elem)
            return None
        raise ValueError(f"unknown metadata value type {kind}")


class GGUFFile:
    """The tensors of one GGUF file by name; ModelLoadError for a file that is not one."""

    def __init__(self, path: Path) -> None:
        from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

        self.path = path
        try:
            mm = np.memmap(path, dtype=np.uint8, mode="r")
            cur = _Cursor(memoryview(mm.data))
            magic, version, n_tensors, n_kv = cur.unpack("4sIQQ")
            if magic != b"GGUF" or version not in (2, 3):
                raise ValueError(f"not a GGUF v2/v3 file (magic {magic!r}, version {version})")
            self.metadata: dict[str, object] = {}
            for _ in range(n_kv):
                key = cur.string()
                (kind,) = cur.unpack("I")
                self.metadata[key] = cur.value(kind)
            infos = []
            for _ in range(n_tensors):
                name = cur.string()
                (n_dims,) = cur.unpack("I")
                dims = cur.unpack("Q" * n_dims)
                kind, offset = cur.unpack("IQ")
                infos.append((name, tuple(int(d) for d in dims), int(kind), int(offset)))
            align = int(self.metadata.get("general.alignment") or 32)  # type: ignore[call-overload]
            start = -(-cur.pos // align) * align
            self.tensors: dict[str, GGUFTensor] = {}
            for name, dims, kind, offset in infos:
                qtype = GGMLQuantizationType(kind)
                block, type_size = GGML_QUANT_SIZES[qtype]
                cols, rows = dims[0], int(np.prod(dims[1:], dtype=np.int64))
                nbytes = cols // block * type_size
                data = mm[start + offset : start + offset + rows * nbytes].reshape(rows, nbytes)
                shape = tuple(reversed(dims))
                self.tensors[name] = GGUFTensor(name, qtype.name, shape, data)
        except (OSError, ValueError, struct.error) as exc:
            raise ModelLoadError(
                f"cannot read GGUF file {path}: {exc} (truncated or corrupt?)"
            ) from exc
        self.architecture = str(self.metadata.get("general.architecture", ""))

    def tensor(self, name: str) -> GGUFTensor:
        """The named tensor, checked to be of a type the engine reads."""
        tensor = self.tensors.get(name)
        if tensor is None:
            raise ModelLoadError(f"{self.path}: the GGUF lacks tensor {name}")
        if tensor.type_name not in SUPPORTED:
            raise ModelLoadError(
                f"{self.path}: tensor {name} is of type {tensor.type_name}, which the engine "
                f"does not read (it reads {', '.join(SUPPORTED)}): use a GGUF quantized to "
                "one of those (Q4_K_M, Q8_0 or F16, for instance)"
            )
        return tensor

    def dequantize(self, name: str, rows: slice = slice(None)) -> torch.Tensor:
        """The tensor (or some of its rows) in fp32, [rows, cols]: one tensor at a time,
        the model is never whole in fp32."""
        t = self.tensor(name)
        if t.type_name in INT4_EXACT:
            q, s, m = self.int4_groups(name, rows)
            return _int4_to_float(q, s, m)
        data = t.data[rows]
        if t.type_name in FLOAT_TYPES:  # copied: the map is read-only
            w = torch.from_numpy(np.array(data).view(_NUMPY[t.type_name]))
            w = w.view(torch.bfloat16).float() if t.type_name == "BF16" else w.float()
        else:
            from gguf.quants import dequantize

            w = torch.from_numpy(dequantize(data, _qtype(t.type_name)))
        return w.reshape(data.shape[0], -1) if len(t.shape) > 1 else w.reshape(-1)

    def int4_groups(
        self, name: str, rows: slice = slice(None)
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(q uint8 [n, k] in 0..15, scales [n, k/32], mins [n, k/32]) with w = q * s + m:
        the tensor's own 4-bit values, read from its blocks (a 4-bit type only)."""
        t = self.tensor(name)
        data = t.data[rows]
        n = data.shape[0]
        blocks = np.ascontiguousarray(data).reshape(-1, _type_size(t.type_name))
        if t.type_name == "Q4_K":  # 8 sub-blocks of 32: w = d * sc * q - dmin * mn
            from gguf.quants import Q4_K

            d = _f16(blocks[:, 0:2])
            dmin = _f16(blocks[:, 2:4])
            sc, mn = Q4_K.get_scale_min(blocks[:, 4 : 4 + Q4_K.K_SCALE_SIZE].copy())
            s = d * sc.astype(np.float32)
            m = -dmin * mn.astype(np.float32)
            qs = blocks[:, 4 + Q4_K.K_SCALE_SIZE :].reshape(-1, 4, 1, 32)
            q = (qs >> np.array([0, 4], dtype=np.uint8).reshape(1, 1, 2, 1)) & np.uint8(15)
        elif t.type_name in ("Q4_0", "Q4_1"):  # one group: w = d * (q - 8), or d * q + m
            d = _f16(blocks[:, 0:2])
            has_min = t.type_name == "Q4_1"
            m = _f16(blocks[:, 2:4]) if has_min else -8.0 * d
            halves = blocks[:, 4 if has_min else 2 :].reshape(-1, 1, 16)
            q = (halves >> np.array([0, 4], dtype=np.uint8).reshape(1, 2, 1)) & np.uint8(15)
            s = d
        else:
            raise ModelLoadError(f"{self.path}: tensor {name} ({t.type_name}) is not 4-bit")
        return (
            torch.from_numpy(np.ascontiguousarray(q).reshape(n, -1)),
            torch.from_numpy(np.ascontiguousarray(s, dtype=np.float32).reshape(n, -1)),
            torch.from_numpy(np.ascontiguousarray(m, dtype=np.float32).reshape(n, -1)),
        )


def gguf_decode_weight_bytes(path: Path) -> int:
    """Bytes of a GGUF's tensors one decode pass reads: all but the token embedding,
    unless the file has no output matrix (its head then reads the embedding whole)."""
    tensors = GGUFFile(path).tensors
    total = sum(t.data.nbytes for t in tensors.values())
    if "output.weight" in tensors and "token_embd.weight" in tensors:
        total -= tensors["token_embd.weight"].data.nbytes
    return int(total)


def _qtype(type_name: str) -> Any:
    from gguf import GGMLQuantizationType

    return GGMLQuantizationType[type_name]


def _type_size(type_name: str) -> int:
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    return int(GGML_QUANT_SIZES[GGMLQuantizationType[type_name]][1])


def _f16(raw: np.ndarray) -> np.ndarray:
    """[blocks, 2] bytes -> [blocks, 1] fp32."""
    return np.ascontiguousarray(raw).view(np.float16).astype(np.float32)


def _int4_to_float(q: torch.Tensor, s: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    n, k = q.shape
    g = q.float().reshape(n, k // GROUP, GROUP)
    return (g * s[..., None] + m[..., None]).reshape(n, k)
