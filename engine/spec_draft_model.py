"""DraftModel: a small model of the target's vocabulary that drafts tokens to verify."""

from __future__ import annotations

import dataclasses
from typing import Any

from engine.config import EngineConfig
from engine.errors import ConfigError
from engine.loading.model_loader import LoadedModel, load
from engine.model_runner import ModelRunner
from engine.scheduler import Sampled, SchedulerOutput


class DraftModel:
    """The draft of ``EngineConfig.draft_model`` (e.g. Qwen2.5's 0.5B for its 1.5B).

    It shares the target's KV pool: its own cache has one block for each of the
    target's, so a sequence's block table (the BlockManager's, under the one scheduler:
    priority, backpressure, preemption and the prefix cache) addresses both. It keeps
    that cache complete by running every step's batch too (``sync``): every computed
    token, a prompt's included, has its draft KV, whichever sequence later drafts.
    ``draft`` then decodes the drafts of the sequences the scheduler chose, greedily,
    one token a pass. A wrong draft only costs time: the target verifies every token.
    """

    def __init__(self, config: EngineConfig, target: LoadedModel, num_blocks: int) -> None:
        assert config.draft_model is not None
        draft_config = dataclasses.replace(
            config,
            model=config.draft_model,
            draft_model=None,
            speculative="off",
            num_kv_blocks=num_blocks,
        )
        self.loaded = load(draft_config)
        check_vocabulary(config.draft_model, target, self.loaded)
        self.runner = ModelRunner(draft_config, self.loaded.model, target.max_model_len)

    def sync(self, batch: SchedulerOutput) -> None:
        """Write the draft's KV of the step's tokens (its samples are not needed)."""
        self.runner.run(batch)

    def draft(self, batch: SchedulerOutput) -> None:
        """Fill ``batch.drafts`` for the sequences in ``batch.model_drafts`` (their
        lengths are the drafts the scheduler gave slots for)."""
        wanted = {i: len(batch.drafts[i]) for i in batch.model_drafts}
        made: dict[int, list[int]] = {i: [] for i in wanted}
        for j in range(max(wanted.values(), default=0)):
            rows = [i for i in wanted if j < wanted[i]]
            # Pass j: each sequence's last token and its j drafts so far, as decode rows.
            step = SchedulerOutput(
                seqs=[batch.seqs[i] for i in rows],
                num_new_tokens=[1 + j] * len(rows),
                drafts={r: made[i] for r, i in enumerate(rows)},
            )
            for i, got in zip(rows, self.runner.run(step), strict=True):
                assert isinstance(got, list)
                made[i].append(got[-1])
        for i, tokens in made.items():
            batch.drafts[i] = tokens


def run_models(
    runner: ModelRunner, drafter: DraftModel | None, batch: SchedulerOutput, speculating: bool
) -> list[Sampled]:
    """One step's forward passes: the drafts first, then the target; the draft's KV is
    kept complete while speculation is on."""
    if drafter is not None and speculating:
        drafter.draft(batch)
    sampled = runner.run(batch)
    if drafter is not None and speculating:
        drafter.sync(batch)
    return sampled


def check_vocabulary(name: str, target: LoadedModel, draft: LoadedModel) -> None:
    """Refuse a draft whose tokens would not mean the target's (ConfigError)."""
    sizes = int(target.model.config.vocab_size), int(draft.model.config.vocab_size)
    same = sizes[0] == sizes[1] and _vocab(target.tokenizer) == _vocab(draft.tokenizer)
    if not same:
        raise ConfigError(
            f"EngineConfig: draft_model {name!r} has a vocabulary different from the "
            f"target's ({sizes[1]} against {sizes[0]} tokens, or other token strings): a "
            "draft must use the target's tokenizer (e.g. Qwen2.5's 0.5B for its 1.5B); "
            "use speculative='ngram' for this model"
        )


def _vocab(tokenizer: Any) -> dict[str, int] | None:
    return None if tokenizer is None else dict(tokenizer.get_vocab())
