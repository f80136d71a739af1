"""Speculator: drafts tokens for decoding sequences and keeps what the target confirms."""

from __future__ import annotations

from engine.config import EngineConfig
from engine.sequence import Sequence
from engine.spec_prompt_lookup import PromptLookup
from engine.spec_state import SpecState


class Speculator:
    """Exact speculative decoding for greedy sequences (EngineConfig.speculative).

    A decoding sequence with a draft computes its last token and the drafted ones in
    one step, each as a decode row of its own (the same kernel and sums as a decode of
    that token alone, so its logits do not change). The target's greedy token after
    each row is what decoding would have produced there: the drafts are kept while they
    equal it, then the target's own next token is added. So the tokens are those of
    decoding without speculation, token for token; only their number per step changes.

    Sampled sequences (temperature > 0) and sequences with stop strings do not speculate:
    their tokens stay exactly those of decoding one at a time (a seeded sample is the
    same stream; a stop string is found after the token that completes it).

    Speculation steps aside while a step would compute more than ``max_batch_tokens``
    tokens without it: there the step is compute-bound and verifying drafts is no
    longer nearly free.
    """

    def __init__(self, config: EngineConfig) -> None:
        self.max_k = config.num_speculative_tokens
        self.min_n, self.max_n = config.prompt_lookup_min, config.prompt_lookup_max
        self.max_batch_tokens = config.speculative_max_batch_tokens
        self.block_size = config.block_size
        self.method = config.speculative
        self.has_draft_model = config.draft_model is not None
        self.num_drafted = self.num_accepted = self.num_verified = 0

    @staticmethod
    def of(config: EngineConfig) -> Speculator | None:
        return None if config.speculative == "off" else Speculator(config)

    def reset_stats(self) -> None:
        self.num_drafted = self.num_accepted = self.num_verified = 0

    @property
    def acceptance(self) -> float:
        """Accepted share of all drafted tokens (0 before any)."""
        return self.num_accepted / self.num_drafted if self.num_drafted else 0.0

    def room(self, planned_tokens: int) -> int:
        """Draft tokens a step may add to the ``planned_tokens`` it computes anyway."""
        return max(0, self.max_batch_tokens - planned_tokens)

    @staticmethod
    def eligible(seq: Sequence) -> bool:
        return seq.params.greedy and not seq.params.stop

    def propose(self, seq: Sequence, room: int, max_model_len: int, spare_blocks: int) -> list[int]:
        """Draft tokens to verify after the sequence's last token: at most ``room``,
        and none if their KV slots would take more than ``spare_blocks`` new blocks."""
        if room <= 0 or not self.eligible(seq):
            return []
        state = seq.spec
        if state is None:
            state = seq.spec = SpecState(PromptLookup(self.min_n, self.max_n), self.max_k)
        if state.sits_out():
            return []
        # Tokens past max_tokens or the context would be computed and thrown away.
        k = min(
            state.k,
            room,
            max_model_len - seq.num_tokens - 1,
            seq.params.max_tokens - seq.num_completion_tokens - 1,
        )
        drafts = state.lookup.propose(seq.token_ids, k) if self.method != "draft" else []
        # "auto": prompt lookup while it has a draft and is accepted as often as the
        # model; the draft model's drafts are placeholders here (the DraftModel writes them).
        use_model = self.has_draft_model and k > 0 and (not drafts or state.prefers_model())
        state.source = "draft" if use_model else "ngram"
        if use_model:
            drafts = [seq.token_ids[-1]] * k
        new_blocks = -(-(seq.num_tokens + len(drafts)) // self.block_size) - len(seq.block_table)
        return drafts if new_blocks <= max(0, spare_blocks) else []

    def accept(self, seq: Sequence, drafts: list[int], targets: list[int]) -> list[int]:
        """The tokens decoding makes: the drafts the target agrees with, then its next.

        ``targets[i]`` is the target's greedy token after the sequence's last token and
        ``drafts[:i]`` (one more than there are drafts).
        """
        assert len(targets) == len(drafts) + 1, (len(targets), len(drafts))
        accepted = 0
        while accepted < len(drafts) and drafts[accepted] == targets[accepted]:
            accepted += 1
        if seq.spec is not None:
            seq.spec.record(len(drafts), accepted)
        self.num_drafted += len(drafts)
        self.num_accepted += accepted
        self.num_verified += 1
        return targets[: accepted + 1]
