"""GPT-Live (`/v1/live/sessions`): an adapter at the edge that drives the same realtime
session as the Realtime routes (docs/live.md)."""
