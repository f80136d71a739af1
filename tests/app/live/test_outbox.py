"""The Live outbox's input transcript: streamed words, then what the final pass adds."""

from app.live.config import PcmFormat
from app.live.outbox import LiveOutbox, unsaid
from app.live.timeline import Timeline
from app.protocol.server_events import TranscriptionCompleted, TranscriptionDelta
from app.protocol.server_events.live import InputTranscriptDelta


def test_unsaid_is_what_the_final_adds_to_the_streamed_words():
    assert unsaid("", "Hello there.") == "Hello there."
    assert unsaid("Hello", " Hello world.") == " world."
    assert unsaid(" what is the", "What is the capital of France?") == " capital of France?"
    assert unsaid("今天天气", "今天天气怎么样？") == "怎么样？"
    assert unsaid("Hello world", "Hello world.") == ""  # punctuation alone adds nothing
    assert unsaid("Hello world", "Hello world") == ""
    assert unsaid("Hollow", "Hello world.") == ""  # heard differently: cannot be taken back
    assert unsaid("", "  ") == ""


def _heard(events: list[object]) -> list[str]:
    sent: list[str] = []
    outbox = LiveOutbox(Timeline(), PcmFormat(type="audio/pcm", rate=24000))
    outbox.send = lambda event: sent.append(event)  # type: ignore[method-assign,assignment,misc]
    for event in events:
        outbox.emit(event)  # type: ignore[arg-type]
    return [e.delta for e in sent if isinstance(e, InputTranscriptDelta)]  # type: ignore[attr-defined]


def test_a_final_pass_that_hears_more_than_the_partials_sends_the_rest():
    # Before the fix a turn that had streamed deltas dropped its final transcript whole,
    # so the words only the final pass heard never reached a Live client.
    heard = _heard(
        [
            TranscriptionDelta(item_id="a", delta="What is"),
            TranscriptionDelta(item_id="a", delta=" the capital"),
            TranscriptionCompleted(
                item_id="a", transcript="What is the capital of France?", usage={}
            ),
        ]
    )
    assert heard == ["What is", " the capital", " of France?"]


def test_a_turn_without_deltas_sends_its_final_and_one_that_said_it_all_sends_nothing():
    heard = _heard(
        [
            TranscriptionCompleted(item_id="a", transcript="Good morning.", usage={}),
            TranscriptionDelta(item_id="b", delta="Thank you"),
            TranscriptionCompleted(item_id="b", transcript="Thank you.", usage={}),
        ]
    )
    assert heard == ["Good morning.", "Thank you"]
