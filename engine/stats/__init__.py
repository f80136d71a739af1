"""Accounting: where the engine's time goes and the counters it publishes."""
