"""PeerProcess: a peer built and called in its own process, errors carried back."""

from __future__ import annotations

import os
import signal
import time

import pytest

from bench.kit.peer_process import PeerProcess, PeerProcessCrashed, PeerProcessError


class Counter:
    """A peer with state: what the benchmark's peers are (a loaded model)."""

    def __init__(self, start: int) -> None:
        self.value = start

    def add(self, n: int) -> tuple[int, int]:
        self.value += n
        return self.value, os.getpid()

    def fail(self) -> None:
        raise ValueError("bad prompt")

    def crash(self) -> None:
        os.kill(os.getpid(), signal.SIGSEGV)  # what a native library's bad access does

    def hang(self) -> None:
        time.sleep(3600)


class Broken:
    def __init__(self) -> None:
        raise RuntimeError("no such model")


def test_a_peer_keeps_its_state_in_another_process() -> None:
    with PeerProcess(Counter, 10) as peer:
        assert peer.add(5)[0] == 15
        value, pid = peer.add(1)
    assert value == 16
    assert pid != os.getpid()
    assert not peer._process.is_alive()


def test_an_error_in_the_peer_is_raised_here_and_the_peer_goes_on() -> None:
    with PeerProcess(Counter, 0) as peer:
        with pytest.raises(PeerProcessError, match="ValueError: bad prompt"):
            peer.fail()
        assert peer.add(2)[0] == 2


def test_a_peer_that_cannot_be_built_says_why() -> None:
    with pytest.raises(PeerProcessError, match="no such model"):
        PeerProcess(Broken)


def test_a_peer_that_never_answers_is_killed_not_waited_for() -> None:
    peer = PeerProcess(Counter, 0)
    peer.timeout_s = 0.5
    with pytest.raises(PeerProcessError, match="did not answer within"):
        peer.hang()
    assert not peer._process.is_alive()
    peer.close()  # and closing it after is harmless


def test_a_peer_that_crashes_is_named_crashed_with_its_signal() -> None:
    """llama.cpp's native build segfaulted on its first completion on an AMX machine; the
    benchmark then saw only "exited (None)"."""
    with PeerProcess(Counter, 0) as peer:
        with pytest.raises(PeerProcessCrashed, match=r"crashed \(killed by SIGSEGV\)") as info:
            peer.crash()
        assert info.value.signal == "SIGSEGV" and info.value.exitcode == -signal.SIGSEGV
