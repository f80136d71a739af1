"""ModelRunner: a scheduled batch -> flat tensors -> model -> sampled tokens."""

from __future__ import annotations

import logging

import torch

from engine.architectures import LlamaForCausalLM
from engine.architectures.llama import LlamaAttention
from engine.config import EngineConfig
from engine.errors import ConfigError
from engine.kernels.cpu_kernels import BF16_SCORES, BF16_TILES, BF16_VALUES, CpuKernels, cpu_flags
from engine.layers.attention import AttentionMetadata, PagedAttention, sdpa_mask
from engine.sampler import Sampler
from engine.scheduler import SchedulerOutput
from engine.scheduling.scheduler_output import Sampled

log = logging.getLogger(__name__)

DEFAULT_CPU_KV_MEMORY = 512 * 1024**2  # bytes of KV pool on CPU unless configured
CUDA_HEADROOM = 512 * 1024**2  # bytes of free GPU memory left to activations and torch


class ModelRunner:
    """Owns the model and its paged KV cache on one device."""

    def __init__(self, config: EngineConfig, model: LlamaForCausalLM, max_model_len: int):
        self.config = config
        self.model = model
        self.block_size = config.block_size
        self.device = model.embed_tokens.weight.device
        self.dtype = model.embed_tokens.weight.dtype
        self.sampler = Sampler(config.seed)
        self.attn_layers = [m for m in model.modules() if isinstance(m, PagedAttention)]
        self.groups = self.attn_layers[0].num_heads // self.attn_layers[0].num_kv_heads
        self.fused_decode = all(getattr(m, "fused", False) for m in self._attention_modules())
        self.kv_dtype = self._kv_dtype()
        self.attention_bf16 = self._attention_bf16()
        self.num_blocks = self._num_blocks(max_model_len)
        self.allocate_kv_cache()

    def _attention_modules(self) -> list[torch.nn.Module]:
        return [m for m in self.model.modules() if isinstance(m, LlamaAttention)]

    def _kv_dtype(self) -> torch.dtype:
        """The KV cache's dtype (see EngineConfig.kv_cache_dtype)."""
        name = self.config.kv_cache_dtype
        if name == "auto":
            quantized = self.config.quantization != "none"
            on_kernels = self.device.type == "cpu" and self.fused_decode
            return torch.float16 if quantized and on_kernels else self.dtype
        dtype: torch.dtype = getattr(torch, name)  # validated by EngineConfig
        if self.fused_decode and dtype == torch.bfloat16:
            raise ConfigError(
                "kv_cache_dtype='bfloat16': the C++ CPU kernels read float32 or float16 "
                "caches; use 'float16' (or R1VOICE_CPU_KERNELS=0 for the torch kernels)"
            )
        return dtype

    def _attention_bf16(self) -> int:
        """The attention kernel's bf16 mask (EngineConfig.attention_bf16): 0 none,
        BF16_VALUES, BF16_VALUES | BF16_SCORES, or all three with BF16_TILES."""
        name = self.config.attention_bf16
        head_dim = self.attn_layers[0].head_dim
        why_not = None
        if not (self.device.type == "cpu" and self.fused_decode):
            why_not = "the C++ CPU kernels do not run this model's attention"
        elif head_dim % 32:
            why_not = f"head_dim {head_dim} is not a multiple of 32"
        elif "avx512_bf16" not in cpu_flags():
            why_not = "the CPU lacks AVX512_BF16"
        if name in ("values", "all", "amx") and why_not is not None:
            raise ConfigError(f"attention_bf16={name!r}: {why_not}; use 'auto' or 'none'")
        no_tiles = why_not or self._no_tiles(head_dim)
        if name == "amx" and no_tiles is not None:
            raise ConfigError(f"attention_bf16='amx': {no_tiles}; use 'auto' or 'all'")
        if name == "auto":
            if self.config.quantization == "none":
                why_not = "unquantized weights: exact attention"
            name = "none" if why_not else "all" if no_tiles else "amx"
            log.info("attention_bf16 auto: %s (%s)", name, why_not or no_tiles or "AMX-BF16 tiles")
        both = BF16_VALUES | BF16_SCORES
        return {"none": 0, "values": BF16_VALUES, "all": both, "amx": both | BF16_TILES}[name]

    @staticmethod
    def _no_tiles(head_dim: int) -> str | None:
        """Why attention cannot run on AMX-BF16 tiles here (None: it can)."""
        if head_dim > 128:
            return f"head_dim {head_dim} is over 128"
        ops = CpuKernels.lib()
        if ops is None or not bool(ops.amx_bf16_ready()):
            return "the CPU or OS gives no AMX-BF16 tiles"
        return None

    def _num_blocks(self, max_model_len: int) -> int:
        layer = self.attn_layers[0]
        elem = torch.empty(0, dtype=self.kv_dtype).element_size()
        per_block = (
            2 * len(self.attn_layers) * self.block_size * layer.num_kv_heads * layer.head_dim * elem
        )
        if self.config.num_kv_blocks is not None:
            return self.config.num_kv_blocks
        if self.config.kv_cache_memory is not None:
            budget = self.config.kv_cache_memory
        elif self.device.type == "cuda":
            free, _ = torch.cuda.mem_get_info(self.device)
            budget = int(free * self.config.gpu_memory_utilization) - CUDA_HEADROOM
        else:
            budget = DEFAULT_CPU_KV_MEMORY
        # Never more than every sequence at full length could use.
        cap = self.config.max_num_seqs * (-(-max_model_len // self.block_size)) + 1
        return max(1, min(budget // per_block, cap))

    def allocate_kv_cache(self) -> None:
        """One zeroed tensor for the pool; each layer gets its own views of it.

        Zeroed because padded reads touch unused slots: they are masked, but a NaN in
        them would still poison the attention output.
        """
        layer = self.attn_layers[0]
        shape = (
            2,
            len(self.attn_layers),
            self.num_blocks,
            self.block_size,
            layer.num_kv_heads,
            layer.head_dim,
        )
        self.kv_cache = torch.zeros(shape, dtype=self.kv_dtype, device=self.device)
        for i, attn in enumerate(self.attn_layers):
            attn.k_cache = self.kv_cache[0, i]
            attn.v_cache = self.kv_cache[1, i]
            attn.bf16 = self.attention_bf16

    def _tensor(self, data: list[int] | list[list[int]]) -> torch.Tensor:
        return torch.tensor(data, dtype=torch.long).to(self.device, non_blocking=True)

    def prepare(
        self, batch: SchedulerOutput
    ) -> tuple[torch.Tensor, torch.Tensor, AttentionMetadata, list[int], list[int]]:
        """Flatten the batch (decodes first) into input ids, positions and metadata.

        Returns also the token index of each row to sample and that row's batch index.
        """
        bs = self.block_size
        drafts = batch.drafts
        order = sorted(range(len(batch.seqs)), key=lambda i: batch.num_new_tokens[i] != 1)
        order = sorted(order, key=lambda i: i not in drafts)  # verifications: decode rows
        per_token = self.fused_decode and self.config.batch_invariant
        ids: list[int] = []
        positions: list[int] = []
        slots: list[int] = []
        row_tables: list[list[int]] = []  # the block table of each sequence with rows
        row_of: list[int] = []  # per kernel row: its index into row_tables
        row_lens: list[int] = []  # per kernel row: the keys it sees
        prefill_lens, prefill_tables, prefill_masks = [], [], []
        prefill_runs: list[int | None] = []
        sample_index: list[int] = []
        sample_rows: list[int] = []
        for i in order:
            seq, n = batch.seqs[i], batch.num_new_tokens[i]
            start = batch.starts.get(i, seq.num_computed_tokens)
            end = start + n
            ids.extend(seq.token_ids[start:end])
            ids.extend(drafts.get(i, ()))  # a verification: its last token, then its drafts
            positions.extend(range(start, end))
            table = seq.block_table
            slots.extend(table[p // bs] * bs + p % bs for p in range(start, end))
            if i in drafts:  # the target's token after each of its rows
                sample_index.extend(range(len(ids) - n, len(ids)))
                sample_rows.extend([i] * n)
            elif end == seq.num_tokens:  # caught up: this step samples its next token
                sample_index.append(len(ids) - 1)
                sample_rows.append(i)
            num_blocks = -(-end // bs)
            if n == 1 or per_token or i in drafts:
                row_of.extend([len(row_tables)] * n)
                row_tables.append(table[:num_blocks])
                row_lens.extend(range(start + 1, end + 1))
            else:
                prefill_lens.append(n)
                prefill_tables.append(self._tensor(table[:num_blocks]))
                run = table[:num_blocks] == list(range(table[0], table[0] + num_blocks))
                prefill_runs.append(table[0] if run else None)
                key_pos = torch.arange(end, device=self.device)
                query_pos = torch.arange(start, end, device=self.device)
                visible = key_pos[None, None, :] <= query_pos[None, :, None]
                prefill_masks.append(sdpa_mask(visible, self.groups, self.dtype))
        decode_block_tables = decode_mask = lens = None
        if row_tables:
            width = max(len(t) for t in row_tables)
            decode_block_tables = self._tensor(
                [t + [0] * (width - len(t)) for t in row_tables]
            ).view(len(row_tables), width)
            if len(row_of) != len(row_tables):  # a prompt's rows share its table
                decode_block_tables = decode_block_tables.index_select(0, self._tensor(row_of))
            lens = self._tensor(row_lens)
            if not self.fused_decode:  # the C++ kernel needs no mask
                ctx = max(row_lens)
                visible = torch.arange(ctx, device=self.device)[None, None, :] < lens[:, None, None]
                decode_mask = sdpa_mask(visible, self.groups, self.dtype)
        meta = AttentionMetadata(
            slot_mapping=self._tensor(slots),
            num_decode_tokens=len(row_lens),
            decode_block_tables=decode_block_tables,
            decode_mask=decode_mask,
            prefill_query_lens=prefill_lens,
            prefill_block_tables=prefill_tables,
            prefill_masks=prefill_masks,
            prefill_block_runs=prefill_runs,
            decode_lens=lens if self.fused_decode else None,
        )
        return self._tensor(ids), self._tensor(positions), meta, sample_index, sample_rows

    @torch.inference_mode()
    def run(self, batch: SchedulerOutput) -> list[Sampled]:
        """One forward pass; the sampled token of each sequence, None mid-prefill, and
        for a sequence verifying drafts the list of the target's tokens after its rows."""
        input_ids, positions, meta, sample_index, sample_rows = self.prepare(batch)
        hidden = self.model(input_ids, positions, meta)
        result: list[Sampled] = [[] if i in batch.drafts else None for i in range(len(batch.seqs))]
        if sample_rows:
            logits = self.model.compute_logits(hidden[self._tensor(sample_index)])
            seqs = [batch.seqs[i] for i in sample_rows]
            tokens = self.sampler(logits, [s.params for s in seqs], [s.generator for s in seqs])
            for row, token in zip(sample_rows, tokens, strict=True):
                got = result[row]
                if isinstance(got, list):
                    got.append(token)
                else:
                    result[row] = token
        return result
