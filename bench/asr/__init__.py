"""Whisper's passes (`bench asr`): a fitted window against 30 s, turns longer than 30 s,
Mandarin."""
