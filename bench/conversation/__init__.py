"""Conversation: speech over an answer (`bench conversation`), turn taking and echo
(`bench turns`), the memory of a long call."""
