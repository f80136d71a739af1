"""`r1voice bench prefix` at a small size: the memory-pressure workload is what it says
(nine documents, a pool holding three, skewed popularity), and a quick run reports the
clustering-vs-cache-aware figures with the KV pool left whole. Numbers are the bench's
own report, never asserted here."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from transformers import AutoTokenizer

from app.cli import build_parser
from bench.engine import prefix
from bench.engine.prefix_workloads import hot_documents
from engine.loading.model_store import resolve_model


def test_hot_documents_outgrow_the_pool_three_times_with_skewed_popularity() -> None:
    tok = AutoTokenizer.from_pretrained(str(resolve_model("smollm2-135m-instruct")))
    prompts = hot_documents(random.Random(0), True, 64, tok)
    docs = Counter(p.split("\n", 1)[0] for p in prompts)
    assert len(prompts) == 24 and 4 <= len(docs) <= 9
    assert docs.most_common(1)[0][0] == "Document 0 of the archive."  # weight 1 of 2.83
    doc_tokens = len(tok.encode(prompts[0].rsplit("\n\n", 1)[0]))
    assert 64 * 16 // 3 <= doc_tokens <= 64 * 16 // 3 + 40  # a pool holds three


@pytest.mark.timeout(600)
def test_quick_run_compares_clustering_with_cache_aware_order() -> None:
    args = build_parser().parse_args(
        ["bench", "prefix", "--quick", "--workloads", "hot_documents",
         "--settings", "cache_aware,clustering", "--max-tokens", "2"]
    )  # fmt: skip
    result = prefix.run(args)
    rows = result["results"]["hot_documents"]
    assert set(rows) == {"cache_aware", "clustering"}
    assert rows["clustering"]["embedded_requests"] == rows["clustering"]["requests"] == 24
    assert rows["cache_aware"]["prompt_tokens"] == rows["clustering"]["prompt_tokens"]
    summary = result["summary"]
    assert summary["hot_documents_hit_rate_points_clustering_minus_cache_aware"] is not None
    assert summary["hot_documents_prefill_computed_clustering_vs_cache_aware"] is not None
