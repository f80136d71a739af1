"""What the bundled LLMs answer (`bench answers`): the questions, the scoring, the report."""
