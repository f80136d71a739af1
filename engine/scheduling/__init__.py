"""Scheduling policy: which waiting request runs next, and how much work fits one step."""
