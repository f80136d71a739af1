"""GGUFFile's arithmetic on a real GGUF file: the bytes a decode pass of it reads (what
`bench decode` sets against the engine's own)."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np

from engine import gguf_decode_weight_bytes


def _write(path: Path, names: list[str]) -> None:
    writer = gguf.GGUFWriter(str(path), "qwen2")
    for i, name in enumerate(names):
        writer.add_tensor(name, np.full((8, 32), i, dtype=np.float32))  # 1,024 bytes each
    writer.write_header_to_file(), writer.write_kv_data_to_file()
    writer.write_tensors_to_file(), writer.close()


def test_a_step_reads_the_output_matrix_and_not_the_embedding_it_gathers_from(
    tmp_path: Path,
) -> None:
    _write(tmp_path / "untied.gguf", ["token_embd.weight", "blk.0.ffn_up.weight", "output.weight"])
    assert gguf_decode_weight_bytes(tmp_path / "untied.gguf") == 2 * 1024


def test_without_an_output_matrix_the_embedding_is_the_head(tmp_path: Path) -> None:
    _write(tmp_path / "tied.gguf", ["token_embd.weight", "blk.0.ffn_up.weight"])
    assert gguf_decode_weight_bytes(tmp_path / "tied.gguf") == 2 * 1024
