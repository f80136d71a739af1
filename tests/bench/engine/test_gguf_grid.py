"""Q4_K sub-blocks read onto our int4 g32 grid reproduce gguf's own dequantization."""

from __future__ import annotations

import numpy as np
import pytest

from bench.engine.gguf_grid import GROUP, _errors, _from_blocks


def test_blocks_read_as_q_s_m_give_ggufs_dequantization_exactly() -> None:
    quants = pytest.importorskip("gguf.quants")
    rng = np.random.default_rng(0)
    blocks = rng.integers(0, 256, size=(6, quants.Q4_K.type_size), dtype=np.uint8)
    # d and dmin: finite, modest fp16 values (random bytes may be inf or NaN)
    blocks[:, :4] = np.array([0.01, 0.002], dtype=np.float16).view(np.uint8)
    q, s, m = _from_blocks(blocks)
    assert q.shape == (6 * 8, GROUP) and int(q.max()) <= 15
    ours = q.astype(np.float32) * s[:, None] + m[:, None]
    theirs = quants.Q4_K.dequantize_blocks(blocks).reshape(-1, GROUP)
    np.testing.assert_array_equal(ours, theirs)


def test_errors_measure_relative_rms() -> None:
    ref = np.array([[1.0, -1.0]], dtype=np.float32)
    got = np.array([[1.0, -0.5]], dtype=np.float32)
    err = _errors(ref, got)
    assert err["max_abs"] == 0.5 and err["exact_fraction"] == 0.5
    assert err["rel_rms"] == pytest.approx(np.sqrt(0.125))
