"""SchedulerOutput: one step's batch, what the scheduler hands the model runner."""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.scheduling.step_cost_model import StepWork
from engine.sequence import Sequence

# What the runner returns per sequence: its next token, None mid-prefill, or for a
# sequence with drafts the target's greedy token after each of its rows.
Sampled = int | list[int] | None


@dataclass
class SchedulerOutput:
    """One step's batch: each sequence with how many of its tokens to compute now.

    ``drafts``: by batch index, the draft tokens a decoding sequence verifies this step
    (its ``num_new_tokens`` counts them: its last token and the drafts). Those in
    ``model_drafts`` are placeholders of the right length until the DraftModel runs.
    ``starts``: by batch index, the position a pass starts computing a sequence's tokens
    at where that is not its computed end (the DraftModel's passes: a row its cache may
    lack, then one new draft a pass); ``num_new_tokens`` counts from there.
    """

    seqs: list[Sequence] = field(default_factory=list)
    num_new_tokens: list[int] = field(default_factory=list)
    drafts: dict[int, list[int]] = field(default_factory=dict)
    model_drafts: set[int] = field(default_factory=set)  # drafts the draft model writes
    starts: dict[int, int] = field(default_factory=dict)
    num_preempted: int = 0
    work: StepWork = field(default_factory=StepWork)  # what the cost model sees
    predicted_ms: float = 0.0  # the cost model's prediction when it was scheduled
    bounded: bool = False  # built under a step-time limit

    def __bool__(self) -> bool:
        return bool(self.seqs)
