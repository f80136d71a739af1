"""DraftModel: a small model of the target's vocabulary that drafts tokens to verify."""

from __future__ import annotations

import dataclasses
from typing import Any

from engine.config import EngineConfig
from engine.errors import ConfigError
from engine.loading.model_loader import LoadedModel, load
from engine.model_runner import ModelRunner
from engine.scheduler import Sampled, SchedulerOutput
from engine.sequence import Sequence


class DraftModel:
    """The draft of ``EngineConfig.draft_model`` (e.g. Qwen2.5's 0.5B for its 1.5B).

    It shares the target's KV pool: its own cache has one block for each of the
    target's, so a sequence's block table (the BlockManager's, under the one scheduler:
    priority, backpressure, preemption and the prefix cache) addresses both. Its cache
    keeps every computed token's KV, a prompt's included, whichever sequence later
    drafts: ``sync`` runs the rows of the step's sequences it did not draft for.
    ``draft`` decodes the drafts of the sequences the scheduler chose, greedily, one
    token a pass, each pass computing one new row (the first also the row its cache may
    lack, ``SpecState.draft_behind``): those passes write the KV of the drafts the
    target then accepts, so a step whose drafts all came from here runs no other pass
    (as vLLM's and EAGLE's drafters reuse their proposals' KV). A wrong draft, or a
    draft KV row missing, only costs time: the target verifies every token.
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
        self.num_passes = 0  # forward passes run, drafting and syncing

    def sync(self, batch: SchedulerOutput) -> None:
        """Write the draft's KV of the step's rows it has not written while drafting."""
        keep = [i for i in range(len(batch.seqs)) if i not in batch.model_drafts]
        if not keep:
            return
        seqs = [batch.seqs[i] for i in keep]
        starts = {r: _first_missing(seq) for r, seq in enumerate(seqs)}
        step = SchedulerOutput(
            seqs=seqs,
            num_new_tokens=[
                batch.num_new_tokens[i] + seqs[r].num_computed_tokens - starts[r]
                for r, i in enumerate(keep)
            ],
            drafts={r: batch.drafts[i] for r, i in enumerate(keep) if i in batch.drafts},
            starts=starts,
        )
        self._run(step)

    def draft(self, batch: SchedulerOutput) -> None:
        """Fill ``batch.drafts`` for the sequences in ``batch.model_drafts`` (their
        lengths are the drafts the scheduler gave slots for)."""
        wanted = {i: len(batch.drafts[i]) for i in batch.model_drafts}
        made: dict[int, list[int]] = {i: [] for i in wanted}
        for j in range(max(wanted.values(), default=0)):
            rows = [i for i in wanted if j < wanted[i]]
            seqs = [batch.seqs[i] for i in rows]
            if j == 0:  # the last token, after any row the cache lacks
                starts = {r: _first_missing(seq) for r, seq in enumerate(seqs)}
                news = [seq.num_tokens - starts[r] for r, seq in enumerate(seqs)]
                drafts: dict[int, list[int]] = {}  # sampled after the last row alone
            else:  # the newest draft alone: the rows before it were written by now
                starts = {r: seq.num_tokens - 1 + j for r, seq in enumerate(seqs)}
                news = [1] * len(rows)
                drafts = {r: made[i][-1:] for r, i in enumerate(rows)}
            step = SchedulerOutput(seqs=seqs, num_new_tokens=news, drafts=drafts, starts=starts)
            for i, got in zip(rows, self._run(step), strict=True):
                assert got is not None
                made[i].append(got[-1] if isinstance(got, list) else got)
        for i, tokens in made.items():
            batch.drafts[i] = tokens

    def _run(self, step: SchedulerOutput) -> list[Sampled]:
        self.num_passes += 1
        return self.runner.run(step)


def _first_missing(seq: Sequence) -> int:
    """The first of the sequence's computed rows the draft's cache may lack."""
    behind = seq.spec.draft_behind if seq.spec is not None else 0
    return max(0, seq.num_computed_tokens - behind)


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
