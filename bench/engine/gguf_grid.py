"""How closely our int4 (group of 32, w = q * s + m) holds a GGUF's Q4_K tensors.

A Q4_K super-block of 256 weights is 8 sub-blocks of 32, each w = d * sc * q - dmin * mn
with q in 0..15, 6-bit sc and mn and fp16 d and dmin: the same affine grid as our int4
group of 32, with s = d * sc and m = -dmin * mn. Two ways to fill our grid, measured
against the GGUF's own dequantized weights (what the conversion stores):
  * ``requantized``: what the engine does today, min/max of each group of the
    dequantized weights (the GGUF's levels may not reach 0 and 15, so values move);
  * ``from_blocks``: q, s and m read from the blocks, s and m rounded to fp16 as our
    kernel stores them (the only loss).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

GROUP = 32


def _blocks(tensor: Any) -> np.ndarray:
    from gguf.quants import Q4_K

    raw = np.asarray(tensor.data).view(np.uint8)
    return raw.reshape(-1, Q4_K.type_size)


def _from_blocks(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q [n_groups, 32], s [n_groups], m [n_groups]) of every sub-block."""
    from gguf.quants import Q4_K

    n = blocks.shape[0]
    d = blocks[:, :2].copy().view(np.float16).astype(np.float32)
    dmin = blocks[:, 2:4].copy().view(np.float16).astype(np.float32)
    sc, mn = Q4_K.get_scale_min(blocks[:, 4 : 4 + Q4_K.K_SCALE_SIZE].copy())
    qs = blocks[:, 4 + Q4_K.K_SCALE_SIZE :].reshape(n, -1, 1, 32)
    q = (qs >> np.array([0, 4], dtype=np.uint8).reshape(1, 1, 2, 1)) & np.uint8(15)
    s = (d * sc.astype(np.float32)).reshape(-1)
    m = (-dmin * mn.astype(np.float32)).reshape(-1)
    return q.reshape(-1, GROUP), s, m


def _errors(ref: np.ndarray, got: np.ndarray) -> dict[str, float]:
    diff = got - ref
    return {
        "rel_rms": float(np.sqrt((diff**2).mean() / max((ref**2).mean(), 1e-30))),
        "max_abs": float(np.abs(diff).max()),
        "exact_fraction": float((diff == 0).mean()),
    }


def measure(gguf_path: Path) -> dict[str, Any]:
    """Per Q4_K tensor and overall: both ways' error against the GGUF's dequantization."""
    from gguf import GGUFReader
    from gguf.quants import Q4_K

    from engine import dequantize_int4, quantize_int4

    reader = GGUFReader(str(gguf_path))
    rows: dict[str, Any] = {}
    totals = {"requantized": [0.0, 0.0], "from_blocks": [0.0, 0.0]}
    for tensor in reader.tensors:
        if tensor.tensor_type.name != "Q4_K":
            continue
        blocks = _blocks(tensor)
        ref = Q4_K.dequantize_blocks(blocks).reshape(-1, GROUP)
        q, s, m = _from_blocks(blocks)
        s16, m16 = s.astype(np.float16).astype(np.float32), m.astype(np.float16).astype(np.float32)
        exact = q.astype(np.float32) * s16[:, None] + m16[:, None]
        w = torch.from_numpy(ref)
        rq, rs, rm = quantize_int4(w, GROUP)
        requant = dequantize_int4(rq, rs.half(), rm.half(), GROUP).numpy()
        rows[tensor.name] = {
            "requantized": _errors(ref, requant),
            "from_blocks": _errors(ref, exact),
        }
        for name, got in (("requantized", requant), ("from_blocks", exact)):
            totals[name][0] += float(((got - ref) ** 2).sum())
            totals[name][1] += float((ref**2).sum())
    overall = {k: round(float(np.sqrt(e / max(r, 1e-30))), 6) for k, (e, r) in totals.items()}
    return {"q4_k_tensors": len(rows), "overall_rel_rms": overall, "tensors": rows}
