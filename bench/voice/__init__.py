"""The voice path end to end (`bench voice`), and the Realtime clients that behave like a
microphone, which the other voice benches drive."""
