"""Call recordings (opt-in): stereo WAV of what was heard and played, with a JSON
transcript, in a directory with a retention limit."""

from app.recording.recorder import CallRecorder
from app.recording.store import RecordingStore

__all__ = ["CallRecorder", "RecordingStore"]
