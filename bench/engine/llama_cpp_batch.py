"""LlamaCppBatchPeer: llama.cpp decoding several sequences together, as its ``n_parallel``
does (its examples/batched and examples/parallel), through llama-cpp-python's low-level
API: one context of ``streams`` sequences, each prompt prefilled under its own
``seq_id``, then one ``llama_decode`` per step holding every unfinished sequence's last
token, greedy argmax of each row's logits.

llama-cpp-python's ``Llama`` decodes one sequence, so this peer drives the C API itself,
on llama.cpp's own context defaults (flash attention ``auto``; a KV cache per sequence,
not unified, which llama.h advises for sequences that share no long prefix) but for
``n_seq_max`` = ``streams`` of ``n_ctx_per_seq`` positions each and ``threads`` both for
one token and for batches.

``run(prompts, max_tokens, eos)`` answers, per prompt, its tokens and the (wall, CPU)
clock of each token's arrival; ``run_each`` decodes the prompts one at a time in the same
context (its own single-sequence reference).
"""

from __future__ import annotations

import ctypes
import time

import numpy as np


class LlamaCppBatchPeer:
    """llama.cpp on a GGUF with ``streams`` sequences decoded together."""

    def __init__(
        self, path: str, threads: int, streams: int, n_ctx_per_seq: int = 1024, n_batch: int = 512
    ) -> None:
        import logging

        import llama_cpp as lc

        # llama-cpp-python prints llama.cpp's log through this logger: errors only, as
        # ``Llama(verbose=False)`` leaves it.
        logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)
        if streams < 1:
            raise ValueError(f"streams must be at least 1, got {streams}")
        self.lc = lc
        lc.llama_backend_init()
        self.model = lc.llama_model_load_from_file(path.encode(), lc.llama_model_default_params())
        if not self.model:
            raise ValueError(f"llama.cpp could not load the GGUF {path}")
        params = lc.llama_context_default_params()
        params.n_ctx = n_ctx_per_seq * streams
        params.n_batch = params.n_ubatch = max(n_batch, streams)
        params.n_seq_max = streams
        params.n_threads = params.n_threads_batch = threads
        params.no_perf = True
        self.ctx = lc.llama_init_from_model(self.model, params)
        if not self.ctx:
            lc.llama_model_free(self.model)
            raise ValueError(f"llama.cpp could not make a context of {streams} sequences")
        self.streams = streams
        self.n_batch = params.n_batch
        self.n_ctx_per_seq = n_ctx_per_seq
        self.n_vocab = lc.llama_vocab_n_tokens(lc.llama_model_get_vocab(self.model))
        self.batch = lc.llama_batch_init(self.n_batch, 0, 1)

    def run(self, prompts: list[list[int]], max_tokens: int, eos: list[int]) -> list[dict]:
        """The prompts decoded together (at most ``streams`` of them)."""
        if len(prompts) > self.streams:
            raise ValueError(f"{len(prompts)} prompts for a context of {self.streams} sequences")
        return self._decode(prompts, max_tokens, set(eos))

    def run_each(self, prompts: list[list[int]], max_tokens: int, eos: list[int]) -> list[dict]:
        """The prompts decoded one at a time: each sequence alone in the batch."""
        return [self._decode([p], max_tokens, set(eos))[0] for p in prompts]

    def _decode(self, prompts: list[list[int]], max_tokens: int, eos: set[int]) -> list[dict]:
        for prompt in prompts:
            if not prompt:
                raise ValueError("an empty prompt: each sequence needs a token to start from")
            if len(prompt) + max_tokens > self.n_ctx_per_seq:
                raise ValueError(
                    f"a prompt of {len(prompt)} tokens plus {max_tokens} new ones exceeds "
                    f"the {self.n_ctx_per_seq} positions of a sequence: give fewer tokens"
                )
        self.lc.llama_memory_clear(self.lc.llama_get_memory(self.ctx), True)
        start_wall, start_cpu = time.perf_counter(), time.process_time()
        tokens: list[list[int]] = [[] for _ in prompts]
        clocks: list[list[tuple[float, float]]] = [[] for _ in prompts]
        for seq, prompt in enumerate(prompts):
            row = self._prefill(seq, prompt)
            tokens[seq].append(self._argmax(row))
            clocks[seq].append((time.perf_counter(), time.process_time()))
        active = [s for s in range(len(prompts)) if not self._done(tokens[s], max_tokens, eos)]
        while active:
            for row, seq in enumerate(active):
                self._put(row, tokens[seq][-1], len(prompts[seq]) + len(tokens[seq]) - 1, seq)
            self.batch.n_tokens = len(active)
            self._check(self.lc.llama_decode(self.ctx, self.batch))
            picked = [self._argmax(row) for row in range(len(active))]
            now = (time.perf_counter(), time.process_time())
            for seq, token in zip(active, picked, strict=True):
                tokens[seq].append(token)
                clocks[seq].append(now)
            active = [s for s in active if not self._done(tokens[s], max_tokens, eos)]
        return [
            {"tokens": t, "clocks": c, "start": (start_wall, start_cpu)}
            for t, c in zip(tokens, clocks, strict=True)
        ]

    def _prefill(self, seq: int, prompt: list[int]) -> int:
        """Evaluate ``prompt`` as sequence ``seq`` in chunks of ``n_batch``; the row of the
        last chunk that holds the prompt's last logits."""
        for begin in range(0, len(prompt), self.n_batch):
            chunk = prompt[begin : begin + self.n_batch]
            for row, token in enumerate(chunk):
                self._put(row, token, begin + row, seq, logits=begin + row == len(prompt) - 1)
            self.batch.n_tokens = len(chunk)
            self._check(self.lc.llama_decode(self.ctx, self.batch))
        return len(chunk) - 1

    def _put(self, row: int, token: int, pos: int, seq: int, logits: bool = True) -> None:
        b = self.batch
        b.token[row] = token
        b.pos[row] = pos
        b.n_seq_id[row] = 1
        b.seq_id[row][0] = seq
        b.logits[row] = logits

    def _argmax(self, row: int) -> int:
        """Greedy: the first of the highest logits of batch row ``row``."""
        ptr = self.lc.llama_get_logits_ith(self.ctx, row)
        logits = np.ctypeslib.as_array(
            ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float)), (self.n_vocab,)
        )
        return int(np.argmax(logits))

    @staticmethod
    def _done(tokens: list[int], max_tokens: int, eos: set[int]) -> bool:
        return tokens[-1] in eos or len(tokens) >= max_tokens

    @staticmethod
    def _check(code: int) -> None:
        if code != 0:
            raise RuntimeError(f"llama_decode returned {code} (1: no KV slot; <0: an error)")

    def close(self) -> None:
        self.lc.llama_batch_free(self.batch)
        self.lc.llama_free(self.ctx)
        self.lc.llama_model_free(self.model)
