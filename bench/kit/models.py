"""Which bundled LLMs a bench runs: those named, each checked to be prepared."""

from __future__ import annotations


def choose_models(names: str | None) -> list[str]:
    """The named bundled LLMs (each must be prepared), else every prepared one."""
    from engine import BUNDLED_LLMS, bundled_llm_dir, is_complete

    prepared = [n for n in BUNDLED_LLMS if is_complete(bundled_llm_dir(n))]
    if not names:
        if not prepared:
            raise SystemExit("error: no bundled LLM is prepared; run `r1voice models prepare`")
        return prepared
    chosen = [n.strip() for n in names.split(",") if n.strip()]
    for name in chosen:
        if name not in BUNDLED_LLMS:
            raise SystemExit(f"error: {name!r} is not a bundled LLM ({', '.join(BUNDLED_LLMS)})")
        if name not in prepared:
            raise SystemExit(f"error: {name} is not prepared; run `r1voice models prepare {name}`")
    return chosen
