"""EngineConfig: every knob of the engine in one validated dataclass."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from engine.errors import ConfigError
from engine.layers.kernel_choice import MODES as INT8_KERNELS
from engine.layers.quantization import check_method
from engine.scheduling.clustering import SIGNATURES

_DTYPES = ("auto", "float32", "bfloat16", "float16")
KV_CACHE_DTYPES = ("auto", "float32", "float16", "bfloat16")
ATTENTION_BF16 = ("auto", "none", "values", "all", "amx")
_POLICIES = ("static", "fcfs", "priority")
_STEP_BUDGET_MODES = ("always", "latency")
SPECULATIVE = ("off", "ngram", "draft", "auto")
MAX_SPECULATIVE_TOKENS = 16
MAX_PROMPT_LOOKUP = 16
# The fields LLMEngine.set_scheduling may change between runs (benchmarks compare them).
SCHEDULING_FIELDS = {
    "scheduling_policy",
    "priority_aging_s",
    "high_priority_max",
    "preemption_reserve",
    "static_batch_timeout_s",
    "max_step_ms",
    "step_budget_mode",
    "max_waiting_tokens",
    "max_waiting_requests",
    "max_queue_delay_s",
    "cache_aware_scheduling",
    "semantic_clustering",
    "cluster_threshold",
    "cluster_min_queue",
    "cluster_signature",
    "enable_prefix_caching",
    "speculative",
    "num_speculative_tokens",
    "prompt_lookup_min",
    "prompt_lookup_max",
    "speculative_max_batch_tokens",
}


@dataclass
class EngineConfig:
    """How to load the model and how much work to batch.

    ``LLM(model, **fields)`` builds one of these from keyword arguments; a bad value
    raises ConfigError right away rather than failing later inside a step.
    """

    model: str
    dtype: str = "auto"  # "auto": float32 on CPU, bfloat16 on CUDA
    device: str = "auto"  # "auto": cuda when available, else cpu
    block_size: int = 16  # tokens per KV block
    max_num_seqs: int = 64  # sequences in one step
    max_num_batched_tokens: int = 2048  # tokens (decodes + prefill chunks) in one step
    max_model_len: int | None = None  # default: the model's max_position_embeddings
    # bytes for the KV pool; default: model_runner.DEFAULT_CPU_KV_MEMORY on CPU
    kv_cache_memory: int | None = None
    # "auto": float16 on CPU for quantized weights on the C++ kernels (half the bytes
    # attention reads and twice the tokens in the pool; perplexity unchanged, see
    # README), else the model's dtype (exact against transformers at "none").
    kv_cache_dtype: str = "auto"
    # bf16 products in the C++ attention kernel (AVX512_BF16 sums two of them a lane,
    # twice the fp32 FMA's work): "values" rounds the softmax weights and values (p.V),
    # "all" q and k as well (q.k, the keys less the sequence's first), "amx" the same
    # operands multiplied on AMX-BF16 tiles. Sums stay fp32 and a token's bits still do
    # not depend on its batch. "auto": "amx" where the CPU grants the tiles (head_dim <=
    # 128), else "all" where the CPU has AVX512_BF16, the kernels run attention and the
    # weights are quantized (head_dim % 32 == 0), else "none" (exact against
    # transformers at quantization "none"). Perplexity and speed: docs/engine.md.
    attention_bf16: str = "auto"
    gpu_memory_utilization: float = 0.9  # CUDA: fraction of free memory for the KV pool
    num_kv_blocks: int | None = None  # fixed pool size (tests), overrides the budget
    enable_prefix_caching: bool = True
    scheduling_policy: str = "priority"  # or "fcfs", "static": see SchedulingPolicy
    priority_aging_s: float = 4.0  # seconds of waiting worth one priority level
    high_priority_max: int = 0  # priority <= this: may use the reserve and preempt
    preemption_reserve: float = 0.2  # share of step tokens and KV pool kept for them
    static_batch_timeout_s: float = 0.25  # "static": the longest a partial batch waits
    # Step-time budget (Scheduler, StepCostModel): prefill chunks are cut so a step's
    # predicted time stays under max_step_ms, "always" or only while "latency"-
    # sensitive work waits (a high-priority request queued or prefilling, or
    # LLMEngine.set_latency_sensitive on, e.g. while a voice session is open). None: off.
    max_step_ms: float | None = 150.0
    step_budget_mode: str = "always"
    # Prefix reuse (engine.scheduling.cache_aware_pick): among waiting requests of
    # equal priority, admit the one with the longest cached prefix first, and hold back
    # those whose next block a running prefill computes (they hit it once cached).
    cache_aware_scheduling: bool = True
    # Prompt clustering (engine.scheduling.clustering): KV retention by cluster, and
    # members of the last admitted cluster admitted together. Off by default: in
    # `bench prefix` it raised the hit rate only under memory pressure with skewed
    # popularity, and by less than a default must (see README).
    semantic_clustering: bool = False
    cluster_signature: str = "minhash"  # or "minilm": an embedding model, far slower
    cluster_threshold: float | None = None  # to join a leader; None: its DEFAULT_THRESHOLDS
    cluster_min_queue: int = 1  # sign only while this many requests wait (minilm: 4+)
    # Backpressure: a request that would overfill the waiting queue is refused at once
    # (EngineBusyError) instead of queueing into a wait that cannot end well.
    max_waiting_tokens: int = 65536  # prompt tokens waiting to be admitted
    max_waiting_requests: int = 512
    max_queue_delay_s: float = 0.0  # refuse while the oldest waiting request waited longer (0: off)
    # Weights: "int8" (per-output-channel), "int4" (group-wise; the group size, one of
    # INT4_GROUP_SIZES, must divide every projection's input size), "none" (the
    # activation dtype).
    quantization: str = "int8"
    quantization_group_size: int = 128
    # The path of the int8 products on CPU (engine.layers.kernel_choice): "measure" times
    # our VNNI kernel, our AMX kernel (where the CPU has AMX) and torch._int_mm (oneDNN)
    # per shape and row count at start, cached per machine; all give the same bits.
    # "vnni", "amx" or "int_mm" forces one.
    int8_kernel: str = "measure"
    seed: int = 0  # generator of requests that sample without their own seed
    num_threads: int | None = None  # torch CPU threads; None leaves torch's default
    # A prompt's logits do not depend on what it is batched with, how its prefill is
    # chunked, or what the prefix cache holds (docs/engine.md, "Batch invariance"): on
    # the C++ kernels every query token goes through the one paged attention kernel.
    # False: prompts take torch's SDPA, shape-dependent (no faster: docs/engine.md).
    batch_invariant: bool = True
    # Speculative decoding (engine.speculator), exact: greedy tokens are those of decoding
    # without it. "ngram": drafts by prompt lookup (the sequence's last n-gram, n from
    # prompt_lookup_max down to prompt_lookup_min, found earlier in its prompt or
    # answer); "draft": a small model of the same vocabulary (draft_model) drafts;
    # "auto": per sequence, whichever was accepted more. Up to num_speculative_tokens
    # drafts a step (adapting per sequence); none while a step would compute more than
    # speculative_max_batch_tokens tokens without them. "off" with a draft_model loads
    # it unused (set_scheduling may turn it on).
    speculative: str = "off"
    num_speculative_tokens: int = 4
    prompt_lookup_min: int = 2
    prompt_lookup_max: int = 4
    speculative_max_batch_tokens: int = 8
    draft_model: str | None = None

    def __post_init__(self) -> None:
        def check(ok: bool, message: str) -> None:
            if not ok:
                raise ConfigError(f"EngineConfig: {message}")

        check(self.dtype in _DTYPES, f"dtype must be one of {_DTYPES}, got {self.dtype!r}")
        check(
            self.kv_cache_dtype in KV_CACHE_DTYPES,
            f"kv_cache_dtype must be one of {KV_CACHE_DTYPES}, got {self.kv_cache_dtype!r}",
        )
        check(
            self.attention_bf16 in ATTENTION_BF16,
            f"attention_bf16 must be one of {ATTENTION_BF16}, got {self.attention_bf16!r}",
        )
        check(self.block_size > 0, "block_size must be > 0")
        check(self.max_num_seqs > 0, "max_num_seqs must be > 0")
        # Every running sequence decodes one token per step: a smaller budget would
        # starve the last ones.
        check(
            self.max_num_batched_tokens >= self.max_num_seqs,
            "max_num_batched_tokens must be >= max_num_seqs",
        )
        check(self.max_model_len is None or self.max_model_len > 1, "max_model_len must be > 1")
        check(self.kv_cache_memory is None or self.kv_cache_memory > 0, "kv_cache_memory > 0")
        check(0.0 < self.gpu_memory_utilization <= 1.0, "gpu_memory_utilization in (0, 1]")
        check(self.num_kv_blocks is None or self.num_kv_blocks > 0, "num_kv_blocks must be > 0")
        check(
            self.scheduling_policy in _POLICIES,
            f"scheduling_policy must be one of {_POLICIES}, got {self.scheduling_policy!r}",
        )
        check(self.priority_aging_s > 0, "priority_aging_s must be > 0")
        check(0.0 <= self.preemption_reserve < 1.0, "preemption_reserve in [0, 1)")
        check(self.static_batch_timeout_s >= 0, "static_batch_timeout_s must be >= 0")
        check(self.max_step_ms is None or self.max_step_ms > 0, "max_step_ms must be > 0")
        check(
            self.step_budget_mode in _STEP_BUDGET_MODES,
            f"step_budget_mode must be one of {_STEP_BUDGET_MODES}",
        )
        check(
            self.cluster_threshold is None or -1.0 <= self.cluster_threshold <= 1.0,
            "cluster_threshold in [-1, 1]",
        )
        check(
            self.cluster_signature in SIGNATURES,
            f"cluster_signature must be one of {SIGNATURES}, got {self.cluster_signature!r}",
        )
        check(self.max_waiting_tokens > 0, "max_waiting_tokens must be > 0")
        check(self.max_waiting_requests > 0, "max_waiting_requests must be > 0")
        check(self.max_queue_delay_s >= 0, "max_queue_delay_s must be >= 0")
        check_method(self.quantization, self.quantization_group_size)
        check(
            self.int8_kernel in INT8_KERNELS,
            f"int8_kernel must be one of {INT8_KERNELS}, got {self.int8_kernel!r}",
        )
        check(self.num_threads is None or self.num_threads > 0, "num_threads must be > 0")
        self._check_speculative(check)

    def _check_speculative(self, check: Callable[[bool, str], None]) -> None:
        check(
            self.speculative in SPECULATIVE,
            f"speculative must be one of {SPECULATIVE}, got {self.speculative!r}",
        )
        k = self.num_speculative_tokens
        check(
            isinstance(k, int) and 1 <= k <= MAX_SPECULATIVE_TOKENS,
            f"num_speculative_tokens must be in [1, {MAX_SPECULATIVE_TOKENS}], got {k!r}",
        )
        lo, hi = self.prompt_lookup_min, self.prompt_lookup_max
        check(
            isinstance(lo, int) and isinstance(hi, int) and 1 <= lo <= hi <= MAX_PROMPT_LOOKUP,
            f"prompt_lookup_min and prompt_lookup_max must satisfy 1 <= min <= max <= "
            f"{MAX_PROMPT_LOOKUP}, got {lo!r} and {hi!r}",
        )
        check(
            self.speculative_max_batch_tokens >= 1,
            f"speculative_max_batch_tokens must be >= 1, got {self.speculative_max_batch_tokens!r}",
        )
        check(
            self.speculative != "draft" or bool(self.draft_model),
            "speculative='draft' needs draft_model (a model name or path of the same "
            "vocabulary as the target's); or use speculative='ngram'",
        )
        check(
            self.draft_model is None or self.speculative != "ngram",
            "draft_model is set but speculative is 'ngram': use 'draft' or 'auto' (or "
            "'off'), or leave draft_model unset",
        )
