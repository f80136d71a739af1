"""AsyncLLM: the engine loop on its own thread, streams and aborts for asyncio callers."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import queue
import threading
import uuid
from collections.abc import AsyncGenerator, Callable
from typing import Any

from engine.errors import EngineError
from engine.give_way import GiveWay
from engine.llm_engine import LLMEngine, Prompt
from engine.outputs import EngineStats, RequestOutput, StreamDelta
from engine.request_stream import RequestStream, fail_all, publish
from engine.sampling_params import SamplingParams
from engine.sequence import Sequence
from engine.stats.stats_snapshot import StatsSnapshot
from engine.thread_name import set_os_thread_name

log = logging.getLogger(__name__)


class AsyncLLM:
    """``AsyncLLM(model, **EngineConfig fields)``: many concurrent ``stream()`` calls.

    Only the engine thread touches the engine: callers send it commands (add, abort,
    warm up) through a queue, and it pushes deltas back into each caller's event loop.
    Model steps never run on an event loop thread. Statistics come from a snapshot the
    engine thread publishes after every step and command, so ``stats()`` is safe (and
    never waits for a step) from any thread.
    """

    def __init__(self, model: str, **kwargs: Any) -> None:
        self._commands: queue.SimpleQueue[tuple[Callable[[], Any], concurrent.futures.Future]]
        self._commands = queue.SimpleQueue()
        self._wakeup = threading.Event()
        self.give_way = GiveWay(self._wakeup.set)  # its hold() pauses the steps (give_way.py)
        self._stop = False
        self._stepped_empty = False
        self._streams: dict[str, RequestStream] = {}
        self.failure: str | None = None  # why the engine loop died, if it did
        # Built on the thread that steps it (torch's OpenMP teams are per thread: built on
        # the caller's, it decoded far slower); the build's errors are raised in the caller.
        built: concurrent.futures.Future = concurrent.futures.Future()
        self._thread = threading.Thread(
            target=self._build_and_loop, args=(model, kwargs, built), name="r1voice-engine"
        )
        self._thread.daemon = True
        self._thread.start()
        self.engine: LLMEngine = built.result()
        self.tokenizer = self.engine.tokenizer
        self.model_path = self.engine.model_path

    # ---- public API -----------------------------------------------------------------

    @property
    def max_model_len(self) -> int:
        """The longest sequence (prompt + completion) a request may reach, in tokens."""
        return self.engine.max_model_len

    async def stream(
        self,
        prompt: Prompt,
        params: SamplingParams | None = None,
        request_id: str | None = None,
        priority: int | None = None,
        cache_salt: str | None = None,
    ) -> AsyncGenerator[StreamDelta, None]:
        """Yield the request's text (whole characters) as it is generated.

        ``priority``: lower runs first, None for the engine's default (short prompts
        first); ``cache_salt``: prefix-cache namespace (see LLMEngine.add_request).
        Raises InvalidRequestError on bad input and EngineBusyError when the waiting
        queue is full, before the first delta and with nothing queued. Leaving the
        loop early or being cancelled aborts the request and frees its KV blocks.
        """
        loop = asyncio.get_running_loop()
        rid = request_id if request_id is not None else uuid.uuid4().hex
        stream = RequestStream(loop, asyncio.Queue())
        if not isinstance(prompt, str):  # refuse at once when the queue is already full
            self._check_capacity(len(prompt))

        def add() -> None:
            self.engine.add_request(prompt, params, rid, priority, cache_salt)
            self._streams[rid] = stream

        added = self._call(add)
        done = False
        try:  # from here on, any exit (cancellation included) aborts what the add made
            await asyncio.wrap_future(added)
            while not done:
                delta = await stream.queue.get()
                done = delta.finished
                if delta.finish_reason == "error":
                    raise EngineError(f"request {rid} failed inside the engine")
                yield delta
        finally:
            if not done:
                # Commands run in order, so this runs after the add if the add ran at
                # all; it aborts only a request this stream registered (not another
                # caller's with the same id, when ours was refused as a duplicate).
                future = self._call(lambda: self._abort_stream(rid, stream))
                # Wait for the blocks to be freed when we can; an abandoned generator
                # finalized outside its loop just leaves the abort queued.
                with contextlib.suppress(Exception):
                    await asyncio.wrap_future(future)

    async def generate(
        self, prompt: Prompt, params: SamplingParams | None = None, **kwargs: Any
    ) -> RequestOutput:
        """Run one request to the end (the sum of its stream)."""
        text, tokens, last = [], [], None
        async for delta in self.stream(prompt, params, **kwargs):
            text.append(delta.text)
            tokens.extend(delta.token_ids)
            last = delta
        assert last is not None
        return RequestOutput(
            request_id=last.request_id,
            prompt_token_ids=[],
            token_ids=tokens,
            text="".join(text),
            finished=True,
            finish_reason=last.finish_reason,
            num_cached_tokens=last.num_cached_tokens,
            times=last.times,
        )

    async def abort(self, request_id: str) -> None:
        """Stop a request now; when this returns its KV blocks are free."""
        await asyncio.wrap_future(self._call(lambda: self._abort(request_id)))

    async def warmup(self) -> None:
        """Run representative prefill and decode shapes once (on the engine thread)."""
        await asyncio.wrap_future(self._call(self.engine.warmup))

    def warmup_sync(self) -> None:
        """``warmup`` for callers outside an event loop; blocks until done."""
        self._call(self.engine.warmup).result()

    async def set_scheduling(self, **fields: Any) -> None:
        """LLMEngine.set_scheduling on the engine thread (only while no request is live)."""
        await asyncio.wrap_future(self._call(lambda: self.engine.set_scheduling(**fields)))

    def set_latency_sensitive(self, on: bool) -> None:
        """LLMEngine.set_latency_sensitive on the engine thread (returns at once)."""
        self._call(lambda: self.engine.set_latency_sensitive(on))

    def reset_stats(self) -> None:
        """Zero the engine's counters and wall-time shares (on the engine thread)."""
        self._call(self.engine.reset_stats).result()

    async def free_all(self) -> None:
        await asyncio.wrap_future(self._call(self._free_all))

    def stats(self) -> EngineStats:
        """The engine's latest published statistics; callable from any thread.

        Counters are as of the last step or command; wall-time shares run to now.
        """
        return self._snapshot.current()

    def check_load(self) -> None:
        """Raise EngineBusyError now if the engine refuses new work (its queue is full or
        has waited too long), before the caller spends time preparing a prompt."""
        self._check_capacity(0)

    def _check_capacity(self, num_tokens: int) -> None:
        """Backpressure from the caller's thread, on the published snapshot only."""
        error = self._snapshot.capacity_error(num_tokens, self.engine.config)
        if error is not None:
            self._call(self.engine.count_refusal)  # the counter is the engine thread's
            raise error

    async def shutdown(self) -> None:
        """Stop the engine thread (live streams end as aborted)."""
        await asyncio.to_thread(self.close)

    def close(self) -> None:
        if self._thread.is_alive():
            self._call(self._free_all)
            self._stop = True
            self._wakeup.set()
            self._thread.join()
        self.engine.close()

    # ---- engine thread --------------------------------------------------------------

    def _build_and_loop(
        self, model: str, kwargs: dict[str, Any], built: concurrent.futures.Future
    ) -> None:
        set_os_thread_name("r1voice-engine")  # before torch starts its OpenMP team here
        try:
            self.engine = LLMEngine(model, **kwargs)
        except BaseException as exc:
            built.set_exception(exc)
            return
        # Replaced whole (one reference assignment) by the engine thread; read anywhere.
        self._snapshot: StatsSnapshot = self._take_snapshot()
        built.set_result(self.engine)
        try:
            self._loop()
        except BaseException as exc:  # the loop itself died: nothing may wait on it
            log.critical("the engine loop stopped", exc_info=exc)
            self.failure = f"the engine loop stopped ({type(exc).__name__}: {exc})"
            self._stop = True
            fail_all(self._streams)
            self._fail_commands()

    def _fail_commands(self) -> None:
        while True:
            try:
                _, future = self._commands.get_nowait()
            except queue.Empty:
                return
            if future.set_running_or_notify_cancel():
                future.set_exception(EngineError(self.failure or "the engine is shut down"))

    def _call(self, fn: Callable[[], Any]) -> concurrent.futures.Future:
        future: concurrent.futures.Future = concurrent.futures.Future()
        if self._stop:
            future.set_exception(EngineError(self.failure or "the engine is shut down"))
            return future
        self._commands.put((fn, future))
        self._wakeup.set()
        if self.failure is not None:  # the loop died after the check: nobody will run it
            self._fail_commands()
        return future

    def _loop(self) -> None:
        while not self._stop:
            self._wakeup.clear()
            self._run_commands()
            stats, idle = self._snapshot.stats, not self.engine.has_unfinished()
            if idle or (held := self.give_way.wait_s(stats.num_running, stats.num_waiting)) > 0:
                self._wakeup.wait(None if idle else held)  # new commands, a hold's end wake it
                continue
            if self._stepped_empty:
                # Requests wait but nothing could be scheduled (a static batch filling
                # up): sleep a little instead of spinning, wake up on new commands.
                self._wakeup.wait(0.002)
                self._wakeup.clear()
                self._run_commands()
            try:
                updated = self.engine.step()
                self._stepped_empty = self.engine.last_batch_size == 0
            except Exception:  # a bug in scheduling: fail what is live, keep serving
                log.exception("engine step failed")
                updated = self.engine.finish_all("error")
            self._publish(updated)
        self._run_commands()

    def _run_commands(self) -> None:
        while True:
            try:
                fn, future = self._commands.get_nowait()
            except queue.Empty:
                return
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn()
            except BaseException as exc:
                self._publish_stats()
                future.set_exception(exc)
            else:
                self._publish_stats()  # before the caller resumes: it sees the effect
                future.set_result(result)

    def _take_snapshot(self) -> StatsSnapshot:
        clock = self.engine.clock
        return StatsSnapshot(self.engine.stats(), clock.reading(), clock.tokens_per_s)

    def _publish_stats(self) -> None:
        self._snapshot = self._take_snapshot()

    def _publish(self, seqs: list[Sequence]) -> None:
        """Statistics first, so a caller woken by a delta already sees the step's effect."""
        self._publish_stats()
        if publish(self._streams, seqs, self.engine.stream_text, self.engine.abort):
            self._publish_stats()  # an unheard caller's abort freed blocks after the first

    def _abort_stream(self, request_id: str, stream: RequestStream) -> None:
        if self._streams.get(request_id) is stream:
            self._abort(request_id)

    def _abort(self, request_id: str) -> None:
        seq = self.engine.abort(request_id)
        if seq is not None:
            self._publish([seq])

    def _free_all(self) -> None:
        live = list(self.engine.requests.values())
        self.engine.free_all()
        self._publish(live)
