"""MinHash signatures of prompts: a cheap predictor of which prompts share their KV.

Two prompts share prefix KV only where they share tokens, so the signal that predicts
reuse is token overlap, not meaning. A MinHash of a prompt's token n-grams (SHINGLE
tokens each) estimates the Jaccard similarity of two prompts' n-gram sets (Broder, "On
the resemblance and containment of documents", 1997): the share of equal signature
entries. It reads the token ids the engine already has (no detokenizing, no model), so
it costs a small fraction of an all-MiniLM-L6-v2 embedding.
"""

from __future__ import annotations

import numpy as np

NUM_HASHES = 64
SHINGLE = 4  # tokens per n-gram: long enough that shared template tokens weigh little
_MIX = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0x27D4EB2F165667C5)


class MinHasher:
    """Signatures of token sequences; fixed seed, so signatures compare across runs."""

    def __init__(self, num_hashes: int = NUM_HASHES, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        high = np.iinfo(np.int64).max
        self._mult = rng.integers(1, high, size=num_hashes, dtype=np.uint64) | np.uint64(1)
        self._add = rng.integers(0, high, size=num_hashes, dtype=np.uint64)

    def signature(self, token_ids: list[int]) -> np.ndarray:
        """The MinHash of the prompt's distinct n-grams (uint64, one entry per hash)."""
        tokens = np.asarray(token_ids, dtype=np.uint64)
        if tokens.size < SHINGLE:  # too short for one n-gram: hash the tokens themselves
            tokens = np.concatenate([tokens, np.zeros(SHINGLE - tokens.size, dtype=np.uint64)])
        n = tokens.size - SHINGLE + 1
        shingles = np.zeros(n, dtype=np.uint64)
        for i, mix in enumerate(_MIX):  # one 64-bit id per n-gram (wrapping arithmetic)
            shingles ^= tokens[i : i + n] * np.uint64(mix)
        shingles = np.unique(shingles)
        hashed = self._mult[:, None] * shingles[None, :] + self._add[:, None]
        hashed ^= hashed >> np.uint64(29)  # the multiply's low bits alone are weak
        return np.asarray(hashed.min(axis=1))


def jaccard(leaders: np.ndarray, signature: np.ndarray) -> np.ndarray:
    """Estimated Jaccard similarity of each row of ``leaders`` with ``signature``."""
    return np.asarray((leaders == signature[None, :]).mean(axis=1))
