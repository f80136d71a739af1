"""The chat questions `bench engine` times its streams on, and `bench quant` its greedy
agreement."""

from __future__ import annotations

QUESTIONS = [
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "Explain photosynthesis in one sentence.",
    "List three prime numbers.",
    "Hi! How are you today?",
    "Give me a tip for sleeping better.",
    "What is a black hole?",
    "Translate 'good morning' into Spanish.",
    "Why is the sky blue?",
    "Suggest a name for a grey cat.",
    "How do I boil an egg?",
    "What does a CPU do?",
    "Tell me a short joke.",
    "Summarize the plot of Romeo and Juliet in two sentences.",
    "What are the three states of matter?",
    "How many legs does a spider have?",
]
