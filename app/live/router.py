"""Which user turns a Live session delegates without asking the live model
(`R1VOICE_LIVE_DELEGATE`): "model" (none: the live model calls its `delegate` tool),
"questions" (a turn that reads as a question or a request for knowledge) or "always".

A small fast model calls a tool poorly, and offering it the tool lengthens every turn's
prompt and makes its first words wait on the choice; read from the transcript, the
choice costs nothing and the live model answers as fast as without delegation."""

from __future__ import annotations

ROUTES = ("model", "questions", "always")  # app/settings.py checks R1VOICE_LIVE_DELEGATE
# A question or request, by its first word (English) or its particles (Chinese).
ASKING = {
    "what", "whats", "what's", "who", "whom", "whose", "where", "when", "which", "why",
    "how", "is", "are", "was", "were", "can", "could", "do", "does", "did", "will",
    "would", "should", "shall", "may", "tell", "explain", "name", "calculate", "compute",
    "convert", "define", "describe", "give", "list", "find", "please",
}  # fmt: skip
# ... or by the word after one of these ("In which country ...", "So how long ...").
LEADS = {
    "in", "on", "at", "for", "from", "to", "by", "with", "about", "of", "and", "so", "but",
    "ok", "okay", "well", "hey", "um", "uh",
}  # fmt: skip
ASKING_ZH = ("吗", "什么", "几", "多少", "怎么", "怎样", "哪", "谁", "为什么", "请", "如何")


def routed(route: str, transcript: str) -> bool:
    """Whether `route` delegates a user turn that said `transcript`."""
    said = transcript.strip()
    if route == "model" or not said:
        return False
    if route == "always" or said.endswith(("?", "？")):
        return True
    if any(p in said for p in ASKING_ZH):
        return True
    words = [w.strip(".!") for w in said.lower().replace(",", " ").split()]
    return words[0] in ASKING or (len(words) > 1 and words[0] in LEADS and words[1] in ASKING)
