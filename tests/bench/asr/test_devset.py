"""The long-speech dev set is there on a fresh clone: LJSpeech's eight pieces in git."""

from bench.asr import devset


def test_ljspeech_pieces_load_from_the_repository_when_shared_data_lacks_them(
    monkeypatch, tmp_path
):
    monkeypatch.setenv("R1VOICE_SPEECH_CACHE", str(tmp_path))  # an empty cache
    pieces = devset.ljspeech()
    assert [said for said, _ in pieces] == [said for _, said in devset.LJSPEECH]
    # Each piece is speech of its text's length at 16 kHz, not an empty or cut file:
    # LJSpeech reads about 2.5 words a second.
    for said, samples in pieces:
        words = len(said.split())
        assert words / 5.0 < len(samples) / devset.RATE < words / 1.2 + 1.0
        assert float(abs(samples).max()) > 0.1
