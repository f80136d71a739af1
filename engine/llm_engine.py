"""LLMEngine: requests in, tokens and text out; one step() at a time."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence as Seq
from typing import Any

import torch

from engine.block_manager import BlockManager
from engine.config import SCHEDULING_FIELDS, EngineConfig
from engine.errors import ConfigError, InvalidRequestError
from engine.loading.model_loader import load
from engine.model_runner import ModelRunner
from engine.output_processor import OutputProcessor
from engine.outputs import RequestOutput
from engine.prompt_check import Prompt, check_priority, check_prompt, tokenize
from engine.reasoning_budget import ReasoningBudget, ThinkTokens
from engine.sampling_params import SamplingParams
from engine.scheduler import Sampled, Scheduler, SchedulerOutput
from engine.scheduling.backpressure import admission_error
from engine.sequence import Sequence
from engine.spec_draft_model import DraftModel, run_models
from engine.stats.engine_stats import EngineStats, collect_stats
from engine.stats.step_clock import StepClock

log = logging.getLogger(__name__)


class LLMEngine:
    """The synchronous engine: ``add_request`` then ``step`` until nothing is left.

    ``LLM(model, **config_fields)`` loads the model; ``generate`` is the batch API and
    ``AsyncLLM`` drives ``step`` from its own thread for streaming.
    """

    def __init__(self, model: str, **kwargs: Any) -> None:
        self.config = config = EngineConfig(model=str(model), **kwargs)
        if config.num_threads:
            torch.set_num_threads(config.num_threads)
        loaded = load(config)
        self.model_path, self.model = loaded.model_path, loaded.model
        self.tokenizer = loaded.tokenizer
        self.model_config = self.model.config
        self.think_tokens = ThinkTokens.of(self.tokenizer)  # None: the model does not think
        self.max_model_len = loaded.max_model_len
        self.model_runner = ModelRunner(config, self.model, self.max_model_len)
        self.block_manager = BlockManager(
            self.model_runner.num_blocks, config.block_size, config.enable_prefix_caching
        )
        num_blocks = self.model_runner.num_blocks  # a draft model shares the pool's blocks
        self.drafter = DraftModel(config, loaded, num_blocks) if config.draft_model else None
        # A sequence can never outgrow the whole pool: it ends there ("length") rather
        # than being preempted and waiting forever for room that cannot exist.
        pool_tokens = self.model_runner.num_blocks * config.block_size
        self.max_model_len = min(self.max_model_len, pool_tokens)
        self.scheduler = Scheduler(
            config, self.block_manager, self.max_model_len, loaded.eos_token_ids
        )
        self.requests: dict[str, Sequence] = {}
        self.output_processor = OutputProcessor(self.tokenizer)
        self.prompt_tokens = 0
        self.num_refused = 0  # requests refused by backpressure (EngineBusyError)
        self.clusterer: Any = None  # a Clusterer once semantic_clustering was on
        self._start_clusterer()
        self.last_batch_size = 0
        self.clock = StepClock()

    def _start_clusterer(self) -> None:
        from engine.scheduling.clustering import clusterer_for  # minilm: sentence-transformers

        self.clusterer = clusterer_for(self.config, self.tokenizer, self.clusterer)

    # ---- requests -------------------------------------------------------------------

    def tokenize(self, prompt: Prompt) -> list[int]:
        return tokenize(self.tokenizer, prompt)

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
        see SchedulingPolicy). ``cache_salt``: requests share prefix-cache blocks only with
        requests of the same salt (None: the common namespace). Raises EngineBusyError,
        queueing nothing, when the request would overfill the waiting queue (unless
        ``backpressure`` is False: the batch API ``generate`` queues all its prompts).
        """
        params = params or SamplingParams()
        vocab = int(self.model_config.vocab_size)
        token_ids = check_prompt(self.tokenize(prompt), vocab, self.max_model_len)
        if request_id is not None and request_id in self.requests:
            raise InvalidRequestError(f"request id {request_id!r} is already in use")
        check_priority(priority)
        if backpressure:
            self.check_capacity(len(token_ids))
        seq = Sequence(token_ids, params, request_id, priority, cache_salt=cache_salt)
        budget = params.max_reasoning_tokens
        seq.reasoning = ReasoningBudget.of(self.think_tokens, budget, token_ids)
        if params.seed is not None:
            seq.generator = torch.Generator().manual_seed(params.seed)
        self.scheduler.add(seq)  # first: nothing else holds the request if this refuses it
        self.output_processor.add(seq)
        self.requests[seq.request_id] = seq
        self.prompt_tokens += len(token_ids)
        if (
            self.config.semantic_clustering
            and self.clusterer is not None
            and len(self.scheduler.waiting) >= self.config.cluster_min_queue
        ):
            self.clusterer.submit(seq)  # sets seq.cluster_id on the embedding thread
        if self.clock.state == "idle":
            self.clock.mark("stalled")
        return seq

    def check_capacity(self, num_tokens: int) -> None:
        """Raise EngineBusyError if a prompt of ``num_tokens`` would overfill the queue
        (see engine.scheduling.backpressure); counts the refusal. Engine thread only."""
        sched, tps = self.scheduler, self.clock.tokens_per_s
        now = time.monotonic()
        error = admission_error(
            sched.waiting, sched.waiting_tokens, num_tokens, self.config, tps, now
        )
        if error is not None:
            self.num_refused += 1
            raise error

    def set_latency_sensitive(self, on: bool) -> None:
        """While on, every step is kept under ``max_step_ms`` in "latency" step-budget
        mode (the app sets it while a voice session is open); "always" mode ignores it."""
        self.scheduler.set_latency_sensitive(on)

    def count_refusal(self) -> None:
        """Count a request refused by a check made outside the engine (AsyncLLM)."""
        self.num_refused += 1

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
        start = time.monotonic()
        batch = self.scheduler.schedule()
        self.clock.mark("busy" if batch else "stalled" if self.has_unfinished() else "idle")
        tokens, failed = self._run(batch)
        updated = self._postprocess(batch, tokens)
        self._measure(batch, time.monotonic() - start)
        return updated + failed

    def _measure(self, batch: SchedulerOutput, seconds: float) -> None:
        """Feed the step's measured time to the clock and the scheduler's cost model."""
        if batch:
            self.clock.record_step(batch, seconds, self.config.max_step_ms)
            self.scheduler.cost_model.observe(batch.work, 1000 * seconds)

    def _postprocess(self, batch: SchedulerOutput, tokens: list[Sampled]) -> list[Sequence]:
        updated = self.scheduler.postprocess(batch, tokens)  # ends on a token
        for seq, reason in self.output_processor.process(updated):  # ends in the text
            self.scheduler.finish(seq, reason)
        for seq in updated:
            if seq.is_finished:
                self._release(seq)
        self.last_batch_size = len(batch.seqs)
        if not self.has_unfinished():
            self.clock.mark("idle")
        return updated

    def _run(self, batch: SchedulerOutput) -> tuple[list[Sampled], list[Sequence]]:
        if not batch:
            return [], []
        try:
            speculating = self.scheduler.speculator is not None
            return run_models(self.model_runner, self.drafter, batch, speculating), []
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
        return [RequestOutput.of(s) for s in seqs]

    # ---- accounting -----------------------------------------------------------------

    def stats(self) -> EngineStats:
        """A snapshot of load and counters; reads engine state without changing it."""
        return collect_stats(
            scheduler=self.scheduler,
            block_manager=self.block_manager,
            reading=self.clock.reading(),
            now=time.monotonic(),
            prompt_tokens=self.prompt_tokens,
            num_refused=self.num_refused,
            clusterer=self.clusterer,
            max_step_ms=self.config.max_step_ms,
            int8_paths=self.model.int8_paths,
        )

    def set_scheduling(self, **fields: Any) -> None:
        """Change scheduling fields of the config (policy, reserve, limits) while idle."""
        bad = set(fields) - SCHEDULING_FIELDS
        if bad or self.has_unfinished():
            raise ConfigError(f"set_scheduling: {sorted(bad) or 'requests are live'}")
        self.config = dataclasses.replace(self.config, **fields)
        self.block_manager.set_prefix_caching(self.config.enable_prefix_caching)
        self._start_clusterer()
        self.scheduler = self.scheduler.reconfigured(self.config)

    def reset_stats(self) -> None:
        """Zero the counters and the wall-time shares (the prefix cache stays)."""
        self.prompt_tokens = self.num_refused = 0
        self.scheduler.reset_stats()
        self.block_manager.reset_stats()
        if self.clusterer is not None:
            self.clusterer.reset_stats()
        self.clock.reset()
        if self.has_unfinished():
            self.clock.mark("stalled")

    def finish_all(self, reason: str) -> list[Sequence]:
        """End every live request ("abort", "error") and free what it held."""
        seqs = self.scheduler.finish_all(reason)
        for seq in seqs:
            self._release(seq)
        return seqs

    def free_all(self) -> None:
        """Abort every request and empty the KV pool and the prefix cache."""
        self.finish_all("abort")
        self.block_manager.free_all()

    def close(self) -> None:
        """Stop the clusterer's worker thread, if any."""
        if self.clusterer is not None:
            self.clusterer.close()

    def warmup(self) -> None:
        """Run a prefill and a decode once (a first request's one-off cost: every weight's
        first touch), no more: readiness waits for it. 40 + 3 x 8 rows stay under the
        row class where int_mm may run (kernel_choice.ROW_CLASSES): it costs seconds."""
        n = max(2, min(40, self.max_model_len // 2, self.config.max_num_batched_tokens))
        gen = torch.Generator().manual_seed(0)
        vocab = int(self.model_config.vocab_size)
        prompts = [torch.randint(vocab, (n,), generator=gen).tolist()]
        batch = min(4, self.config.max_num_seqs)
        prompts += [torch.randint(vocab, (8,), generator=gen).tolist() for _ in range(batch - 1)]
        self.generate(prompts, SamplingParams(max_tokens=2, temperature=0.0, ignore_eos=True))
        self.free_all()
        self.reset_stats()
