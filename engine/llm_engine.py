"""LLMEngine: requests in, tokens and text out; one step() at a time."""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Sequence as Seq
from pathlib import Path
from typing import Any

import torch

from engine.block_manager import BlockManager
from engine.config import EngineConfig
from engine.errors import EngineBusyError, InvalidRequestError
from engine.model_loader import load_model
from engine.model_runner import ModelRunner
from engine.model_store import resolve_model
from engine.output_processor import OutputProcessor
from engine.outputs import EngineStats, RequestOutput
from engine.sampling_params import SamplingParams
from engine.scheduler import Scheduler, SchedulerOutput
from engine.sequence import Sequence

log = logging.getLogger(__name__)

Prompt = str | list[int]
SCHEDULING_FIELDS = {
    "scheduling_policy",
    "priority_aging_s",
    "high_priority_max",
    "preemption_reserve",
    "static_batch_timeout_s",
    "max_waiting_tokens",
    "max_waiting_requests",
    "cache_aware_scheduling",
    "semantic_clustering",
    "cluster_threshold",
    "cluster_min_queue",
    "enable_prefix_caching",
}
_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def _load_tokenizer(model_dir: Path) -> Any:
    import transformers

    try:
        return transformers.AutoTokenizer.from_pretrained(str(model_dir))
    except Exception:  # a directory without tokenizer files: token-id prompts only
        log.info("no tokenizer in %s: prompts must be token ids", model_dir)
        return None


def _eos_ids(model_dir: Path, config: Any) -> set[int]:
    ids: set[int] = set()
    values = [getattr(config, "eos_token_id", None)]
    gen = model_dir / "generation_config.json"
    if gen.is_file():
        values.append(json.loads(gen.read_text()).get("eos_token_id"))
    for value in values:
        ids.update(value if isinstance(value, list) else [] if value is None else [value])
    return ids


class LLMEngine:
    """The synchronous engine: ``add_request`` then ``step`` until nothing is left.

    ``LLM(model, **config_fields)`` loads the model; ``generate`` is the batch API and
    ``AsyncLLM`` drives ``step`` from its own thread for streaming.
    """

    def __init__(self, model: str, **kwargs: Any) -> None:
        self.config = config = EngineConfig(model=str(model), **kwargs)
        if config.num_threads:
            torch.set_num_threads(config.num_threads)
        self.model_path = resolve_model(config.model)
        use_cuda = config.device == "cuda" or (
            config.device == "auto" and torch.cuda.is_available()
        )
        device = torch.device("cuda" if use_cuda else config.device.replace("auto", "cpu"))
        default_dtype = "bfloat16" if device.type == "cuda" else "float32"
        dtype = _DTYPES[default_dtype if config.dtype == "auto" else config.dtype]
        self.model = load_model(
            self.model_path, device, dtype, config.quantization, config.quantization_group_size
        )
        self.model_config = self.model.config
        max_pos = int(self.model_config.max_position_embeddings)
        self.max_model_len = config.max_model_len or max_pos
        if self.max_model_len > max_pos:
            raise InvalidRequestError(
                f"max_model_len {self.max_model_len} > the model's {max_pos} positions"
            )
        self.tokenizer = _load_tokenizer(self.model_path)
        self.model_runner = ModelRunner(config, self.model, self.max_model_len)
        self.block_manager = BlockManager(
            self.model_runner.num_blocks, config.block_size, config.enable_prefix_caching
        )
        # A sequence can never outgrow the whole pool: it ends there ("length") rather
        # than being preempted and waiting forever for room that cannot exist.
        self.max_model_len = min(
            self.max_model_len, self.model_runner.num_blocks * config.block_size
        )
        self.scheduler = Scheduler(config, self.block_manager, self.max_model_len)
        self.scheduler.eos_token_ids = _eos_ids(self.model_path, self.model_config)
        self.requests: dict[str, Sequence] = {}
        self.output_processor = OutputProcessor(self.tokenizer, self.scheduler)
        self.prompt_tokens = 0
        self.num_refused = 0  # requests refused by backpressure (EngineBusyError)
        self.clusterer: Any = None  # engine.clustering.Clusterer when semantic_clustering
        self._start_clusterer()
        self.last_batch_size = 0
        self._tokens_per_s = 0.0  # moving average of tokens computed per second of step
        self._reset_clock()

    def _start_clusterer(self) -> None:
        if self.config.semantic_clustering and self.clusterer is None:
            from engine.clustering import Clusterer  # loads sentence-transformers

            self.clusterer = Clusterer(self.tokenizer, self.config.cluster_threshold)
        if self.clusterer is not None:
            self.clusterer.clusters.threshold = self.config.cluster_threshold

    def _reset_clock(self) -> None:
        self._clock_start = self._mark_time = time.monotonic()
        self._state = "idle"
        self._state_time = {"busy": 0.0, "stalled": 0.0, "idle": 0.0}

    def _mark(self, state: str) -> None:
        """Close the current wall-time interval, charge it to its state, start ``state``.

        busy: a batch runs; stalled: requests wait but nothing is scheduled (a static
        batch filling up, or no room); idle: nothing to do at all.
        """
        now = time.monotonic()
        self._state_time[self._state] += now - self._mark_time
        self._state, self._mark_time = state, now

    # ---- requests -------------------------------------------------------------------

    def tokenize(self, prompt: Prompt) -> list[int]:
        if isinstance(prompt, str):
            if self.tokenizer is None:
                raise InvalidRequestError("this model has no tokenizer: pass token ids")
            return list(self.tokenizer.encode(prompt, add_special_tokens=False))
        return [int(t) for t in prompt]

    def add_request(
        self,
        prompt: Prompt,
        params: SamplingParams | None = None,
        request_id: str | None = None,
        priority: int | None = None,
        cache_salt: str | None = None,
        backpressure: bool = True,
    ) -> Sequence:
        """Validate and queue a request; raises InvalidRequestError for bad input.

        ``priority``: lower runs first; None takes the default (short prompts first,
        see Scheduler). ``cache_salt``: requests share prefix-cache blocks only with
        requests of the same salt (None: the common namespace). Raises EngineBusyError,
        queueing nothing, when the request would overfill the waiting queue (unless
        ``backpressure`` is False: the batch API ``generate`` queues all its prompts).
        """
        params = params or SamplingParams()
        token_ids = self.tokenize(prompt)
        vocab = int(self.model_config.vocab_size)
        if not token_ids:
            raise InvalidRequestError("the prompt is empty")
        if any(not 0 <= t < vocab for t in token_ids):
            raise InvalidRequestError(f"prompt token ids must be in [0, {vocab})")
        if len(token_ids) >= self.max_model_len:
            raise InvalidRequestError(
                f"the prompt has {len(token_ids)} tokens; the model context is "
                f"{self.max_model_len} (prompt + at least one generated token)"
            )
        if request_id is not None and request_id in self.requests:
            raise InvalidRequestError(f"request id {request_id!r} is already in use")
        if backpressure:
            self.check_capacity(len(token_ids))
        seq = Sequence(token_ids, params, request_id, priority, cache_salt=cache_salt)
        if params.seed is not None:
            seq.generator = torch.Generator().manual_seed(params.seed)
        self.output_processor.add(seq)
        self.requests[seq.request_id] = seq
        self.prompt_tokens += len(token_ids)
        self.scheduler.add(seq)
        if (
            self.config.semantic_clustering
            and self.clusterer is not None
            and len(self.scheduler.waiting) >= self.config.cluster_min_queue
        ):
            self.clusterer.submit(seq)  # sets seq.cluster_id on the embedding thread
        if self._state == "idle":
            self._mark("stalled")
        return seq

    def check_capacity(self, num_tokens: int) -> None:
        """Raise EngineBusyError if a prompt of ``num_tokens`` would overfill the queue.

        An empty queue accepts any (valid) prompt. ``retry_after_s`` estimates when the
        excess will have been admitted, from the measured tokens per second.
        """
        # AsyncLLM also calls this from callers' threads: read each counter once.
        sched, config = self.scheduler, self.config
        num_waiting, waiting_tokens = len(sched.waiting), sched.waiting_tokens
        excess = waiting_tokens + num_tokens - config.max_waiting_tokens
        if not num_waiting or (excess <= 0 and num_waiting < config.max_waiting_requests):
            return
        self.num_refused += 1
        excess = max(excess, waiting_tokens // num_waiting, 1)
        rate = self._tokens_per_s or 1000.0
        retry = min(60.0, max(0.1, excess / rate))
        raise EngineBusyError(
            f"the engine's waiting queue is full ({num_waiting} requests, "
            f"{waiting_tokens} tokens waiting); retry in {retry:.1f} s",
            retry_after_s=retry,
        )

    def abort(self, request_id: str) -> Sequence | None:
        """End a request now and free its KV blocks; None if it is not live."""
        seq = self.requests.get(request_id)
        if seq is None:
            return None
        self.scheduler.finish(seq, "abort")
        self._release(seq)
        return seq

    def has_unfinished(self) -> bool:
        return self.scheduler.has_unfinished()

    # ---- the loop -------------------------------------------------------------------

    def step(self) -> list[Sequence]:
        """Schedule, run the model, advance sequences. Returns those with news."""
        batch = self.scheduler.schedule()
        self._mark("busy" if batch else "stalled" if self.has_unfinished() else "idle")
        start = time.monotonic()
        tokens, failed = self._run(batch)
        updated = self.scheduler.postprocess(batch, tokens)
        self.output_processor.process(updated)
        for seq in updated:
            if seq.is_finished:
                self._release(seq)
        self.last_batch_size = len(batch.seqs)
        if batch:
            rate = sum(batch.num_new_tokens) / max(time.monotonic() - start, 1e-6)
            self._tokens_per_s = (
                rate if not self._tokens_per_s else 0.8 * self._tokens_per_s + 0.2 * rate
            )
        if not self.has_unfinished():
            self._mark("idle")
        return updated + failed

    def _run(self, batch: SchedulerOutput) -> tuple[list[int | None], list[Sequence]]:
        if not batch:
            return [], []
        try:
            return self.model_runner.run(batch), []
        except Exception:  # fail this batch, keep the engine serving the others
            log.exception("model step failed; failing %d requests", len(batch.seqs))
            for seq in batch.seqs:
                self.scheduler.finish(seq, "error")
                self._release(seq)
            return [None] * len(batch.seqs), list(batch.seqs)

    def _release(self, seq: Sequence) -> None:
        self.requests.pop(seq.request_id, None)
        self.output_processor.release(seq)

    def stream_text(self, seq: Sequence) -> str:
        """The text that is safe to stream: a possible stop string's start is held back."""
        return self.output_processor.stream_text(seq)

    # ---- batch API ------------------------------------------------------------------

    def generate(
        self,
        prompts: Prompt | Seq[Prompt],
        params: SamplingParams | Seq[SamplingParams] | None = None,
    ) -> list[RequestOutput]:
        """Run prompts (strings or token-id lists) to completion, outputs in order."""
        single = isinstance(prompts, str) or bool(prompts and isinstance(prompts[0], int))
        plist: list[Prompt] = [prompts] if single else list(prompts)  # type: ignore[list-item,arg-type]
        if params is None or isinstance(params, SamplingParams):
            params = [params or SamplingParams()] * len(plist)
        seqs: list[Sequence] = []
        try:
            for prompt, p in zip(plist, params, strict=True):
                seqs.append(self.add_request(prompt, p, backpressure=False))
        except Exception:
            for seq in seqs:
                self.abort(seq.request_id)
            raise
        while any(not s.is_finished for s in seqs):
            self.step()
        return [self.output(s) for s in seqs]

    @staticmethod
    def output(seq: Sequence) -> RequestOutput:
        return RequestOutput(
            request_id=seq.request_id,
            prompt_token_ids=seq.prompt_token_ids,
            token_ids=seq.completion_token_ids,
            text=seq.output_text,
            finished=seq.is_finished,
            finish_reason=seq.finish_reason,
            num_cached_tokens=seq.num_cached_tokens,
        )

    # ---- accounting -----------------------------------------------------------------

    def stats(self) -> EngineStats:
        bm, sched = self.block_manager, self.scheduler
        self._mark(self._state)
        wall = max(self._mark_time - self._clock_start, 1e-9)
        return EngineStats(
            num_running=len(sched.running),
            num_waiting=len(sched.waiting),
            kv_blocks_used=bm.num_blocks - bm.num_free_blocks,
            kv_blocks_total=bm.num_blocks,
            kv_blocks_free=bm.num_free_blocks,
            kv_block_size=bm.block_size,
            prompt_tokens=self.prompt_tokens,
            generation_tokens=sched.generation_tokens,
            prefix_cache_queries=bm.prefix_cache_queries,
            prefix_cache_hits=bm.prefix_cache_hits,
            num_preemptions=sched.num_preemptions,
            num_refused=self.num_refused,
            waiting_tokens=sched.waiting_tokens,
            busy_share=self._state_time["busy"] / wall,
            idle_waiting_share=self._state_time["stalled"] / wall,
            idle_empty_share=self._state_time["idle"] / wall,
            peak_kv_blocks_used=bm.peak_blocks_used,
            prefix_cache_hit_rate=bm.prefix_cache_hits / max(bm.prefix_cache_queries, 1),
            prefill_tokens_saved=bm.prefix_cache_hits,
            prefill_tokens_computed=sched.prefill_tokens,
            **(self.clusterer.stats() if self.clusterer is not None else {}),
        )

    def set_scheduling(self, **fields: Any) -> None:
        """Change scheduling fields of the config (policy, reserve, limits) while idle."""
        bad = set(fields) - SCHEDULING_FIELDS
        if bad or self.has_unfinished():
            raise InvalidRequestError(f"set_scheduling: {sorted(bad) or 'requests are live'}")
        self.config = dataclasses.replace(self.config, **fields)
        if self.block_manager.enable_prefix_caching != self.config.enable_prefix_caching:
            self.block_manager.free_all()
            self.block_manager.enable_prefix_caching = self.config.enable_prefix_caching
        self._start_clusterer()
        scheduler = Scheduler(self.config, self.block_manager, self.max_model_len)
        scheduler.eos_token_ids = self.scheduler.eos_token_ids
        self.scheduler = self.output_processor.scheduler = scheduler

    def reset_stats(self) -> None:
        """Zero the counters and the wall-time shares (the prefix cache stays)."""
        self.prompt_tokens = self.num_refused = 0
        self.scheduler.generation_tokens = self.scheduler.num_preemptions = 0
        self.scheduler.prefill_tokens = 0
        if self.clusterer is not None:
            self.clusterer.num_embedded, self.clusterer.embed_seconds = 0, 0.0
        bm = self.block_manager
        bm.prefix_cache_queries = bm.prefix_cache_hits = 0
        bm.peak_blocks_used = bm.num_blocks - bm.num_free_blocks
        self._reset_clock()
        if self.has_unfinished():
            self._state = "stalled"

    def free_all(self) -> None:
        """Abort every request and empty the KV pool and the prefix cache."""
        for seq in self.scheduler.finish_all("abort"):
            self._release(seq)
        self.block_manager.free_all()

    def warmup(self) -> None:
        """Run representative prefill and decode shapes once, then forget them."""
        n = max(2, min(256, self.max_model_len // 2, self.config.max_num_batched_tokens))
        gen = torch.Generator().manual_seed(0)
        vocab = int(self.model_config.vocab_size)
        prompts = [torch.randint(vocab, (n,), generator=gen).tolist()]
        batch = min(8, self.config.max_num_seqs)
        prompts += [torch.randint(vocab, (8,), generator=gen).tolist() for _ in range(batch - 1)]
        self.generate(prompts, SamplingParams(max_tokens=4, temperature=0.0, ignore_eos=True))
        self.free_all()
        self.reset_stats()
