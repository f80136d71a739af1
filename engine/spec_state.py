"""SpecState: one sequence's speculation: how many tokens to draft next, and its record."""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.spec_prompt_lookup import PromptLookup

MAX_REST = 16  # steps a sequence whose drafts keep missing goes without one


@dataclass
class SpecState:
    """Per sequence: the draft length adapts to what the target accepted.

    All drafts accepted: the next draft is twice as long (up to ``max_k``); some
    rejected: the next is one longer than what was accepted. A draft missed from its
    first token makes the sequence sit out its next steps, 1, 2, 4... up to
    ``MAX_REST`` of them in a row of misses, until a draft is accepted again: an open
    answer finds n-grams it does not repeat ("the", "is") at most steps, and each draft
    verified costs a row of compute (on two cores a fifth to a third of a one-token
    step) for nothing.
    """

    lookup: PromptLookup
    max_k: int
    k: int = 2
    num_drafted: int = 0
    num_accepted: int = 0
    num_verified: int = 0  # steps that verified a draft of this sequence
    history: list[int] = field(default_factory=list)  # accepted per step, the last few
    source: str = "ngram"  # where this step's drafts came from: "ngram" or "draft"
    # Per source, the accepted share of its recent drafts (an exponential average).
    scores: dict[str, float] = field(default_factory=lambda: {"ngram": 0.5, "draft": 0.5})
    # Rows before the computed end that the draft model's cache lacks: its passes wrote
    # the last token and all drafts but the last, so a step that accepted every one of
    # its drafts leaves that last draft's row for its next pass to write.
    draft_behind: int = 0
    rest: int = 0  # steps left to sit out
    backoff: int = 0  # the rest the next whole miss gives (0: none since an acceptance)

    def prefers_model(self) -> bool:
        """Is the draft model's recent acceptance above prompt lookup's?"""
        return self.scores["draft"] > self.scores["ngram"]

    def sits_out(self) -> bool:
        """Does this step go without a draft (a rest after whole misses)? Counts it."""
        if self.rest <= 0:
            return False
        self.rest -= 1
        return True

    def record(self, drafted: int, accepted: int) -> None:
        if drafted:
            share = accepted / drafted
            self.scores[self.source] = 0.7 * self.scores[self.source] + 0.3 * share
        self.num_drafted += drafted
        self.num_accepted += accepted
        self.num_verified += 1
        self.history = [*self.history[-7:], accepted]
        self.draft_behind = int(self.source == "draft" and 0 < drafted == accepted)
        self.k = min(self.max_k, 2 * drafted) if accepted == drafted else accepted + 1
        self.k = max(1, min(self.k, self.max_k))
        if drafted and not accepted:
            self.backoff = min(MAX_REST, max(1, 2 * self.backoff))
            self.rest = self.backoff
        elif accepted:
            self.backoff = 0

    @property
    def acceptance(self) -> float:
        """Accepted share of the drafted tokens (0 before any)."""
        return self.num_accepted / self.num_drafted if self.num_drafted else 0.0
