import assert from "node:assert/strict";
import { test } from "node:test";

import { delegationConfig, LiveTranslator, realtimeSession, SpeechGate, startEvent } from "../../web/lib/live.js";

// The session resource of `session.started`, as app/live/config.py's resource() gives it.
const RESOURCE = { id: "sess_1", model: "gpt-live-1", instructions: "Be brief.", audio: { format: { type: "audio/pcm", rate: 24000 }, output: { voice: "af_heart" } }, delegation: { type: "client" } };
const started = () => {
  const tr = new LiveTranslator(() => 1000);
  tr.fromLive({ type: "session.started", event_id: "e0", session: RESOURCE });
  return tr;
};
const types = (events) => events.map((e) => e.type);

test("session.start carries the page's voice, instructions and delegation", () => {
  assert.deepEqual(startEvent({ voice: "af_heart", instructions: "Be brief.", delegation: "qwen2.5-coder-1.5b-instruct" }), {
    type: "session.start",
    session: {
      model: "gpt-live-1",
      audio: { format: { type: "audio/pcm", rate: 24000 }, output: { voice: "af_heart" } },
      instructions: "Be brief.",
      delegation: { type: "responses", responses: { model: "qwen2.5-coder-1.5b-instruct" } },
    },
  });
  // nothing chosen: the server's voice, no instructions, no delegation
  assert.deepEqual(startEvent({}), { type: "session.start", session: { model: "gpt-live-1", audio: { format: { type: "audio/pcm", rate: 24000 } } } });
  // over WebRTC the call negotiates the format: it is left out
  assert.deepEqual(startEvent({ voice: "af_heart", webrtc: true }).session, { model: "gpt-live-1", audio: { output: { voice: "af_heart" } } });
  assert.deepEqual(startEvent({ webrtc: true }).session, { model: "gpt-live-1" });
  assert.equal(delegationConfig("off"), null);
  assert.deepEqual(delegationConfig("client"), { type: "client" });
});

test("session.started is the page's session.created, in the Realtime shape", () => {
  const tr = new LiveTranslator();
  const [created] = tr.fromLive({ type: "session.started", session: RESOURCE });
  assert.equal(created.type, "session.created");
  assert.deepEqual(created.session, realtimeSession(RESOURCE));
  assert.equal(created.session.audio.output.voice, "af_heart");
  assert.deepEqual(created.session.audio.input.turn_detection, { type: "server_vad" }); // hands-free
  assert.equal(realtimeSession({ audio: { output: { voice: { id: "voice_1" } } } }).audio.output.voice, "voice_1");
});

test("the microphone goes as Live appends; what Live has no need of is dropped, the rest refused by name", () => {
  const tr = started();
  assert.deepEqual(tr.toLive({ type: "input_audio_buffer.append", audio: "AAAA", event_id: "a1" }), { send: [{ type: "session.input_audio.append", audio: "AAAA", event_id: "a1" }] });
  assert.deepEqual(tr.toLive({ type: "session.input_audio.mute" }), { send: [{ type: "session.input_audio.mute" }] });
  assert.deepEqual(tr.toLive({ type: "conversation.item.truncate", item_id: "x", audio_end_ms: 5 }), { send: [] });
  assert.deepEqual(tr.toLive({ type: "response.cancel" }), { send: [] });
  const { refused } = tr.toLive({ type: "response.create", event_id: "r1" });
  assert.deepEqual([refused.type, refused.error.code, refused.error.param, refused.error.event_id], ["error", "live_unsupported", "type", "r1"]);
});

test("a session.update that keeps what session.start fixed is confirmed; one that changes it is refused naming the field", () => {
  const tr = started();
  const same = tr.toLive({ type: "session.update", event_id: "u1", session: { type: "realtime", instructions: "Be brief.", audio: { output: { voice: "af_heart" } } } });
  assert.deepEqual(same.reply, { type: "session.updated", event_id: "u1", session: tr.session });
  const voice = tr.toLive({ type: "session.update", event_id: "u2", session: { type: "realtime", audio: { output: { voice: "bf_emma" } } } });
  assert.equal(voice.refused.error.param, "session.audio.output.voice");
  const speed = tr.toLive({ type: "session.update", event_id: "u3", session: { type: "realtime", audio: { output: { speed: 1.5 } } } });
  assert.equal(speed.refused.error.param, "session.audio");
  const turn = tr.toLive({ type: "session.update", session: { type: "realtime", temperature: 0.7 } });
  assert.equal(turn.refused.error.param, "session.temperature");
});

test("a spoken turn and its answer become the Realtime events the page shows, in order", () => {
  const tr = started();
  const heard = tr.fromLive({ type: "session.input_transcript.delta", delta: "What is ", start_ms: 500, end_ms: 1500 });
  assert.deepEqual(heard, [
    { type: "input_audio_buffer.speech_started", item_id: "live_user_1", audio_start_ms: 500 },
    { type: "input_audio_buffer.speech_stopped", item_id: "live_user_1", audio_end_ms: 1500 },
    { type: "conversation.item.input_audio_transcription.delta", item_id: "live_user_1", delta: "What is " },
  ]);
  assert.deepEqual(tr.fromLive({ type: "session.input_transcript.delta", delta: "it? ", start_ms: 500, end_ms: 1500 }), [
    { type: "conversation.item.input_audio_transcription.delta", item_id: "live_user_1", delta: "it? " },
  ]);
  const usage = { type: "session.usage.updated", usage: { seconds: 2 } };
  assert.deepEqual(tr.fromLive(usage), [{ type: "conversation.item.input_audio_transcription.completed", item_id: "live_user_1", transcript: "What is it?" }, usage]);
  const words = tr.fromLive({ type: "session.output_transcript.delta", delta: "Paris.", start_ms: 2000, end_ms: 2400 });
  assert.deepEqual(words, [
    { type: "response.created", response: { id: "live_resp_2", object: "realtime.response", status: "in_progress", output: [] } },
    { type: "response.output_item.added", response_id: "live_resp_2", item: { id: "live_item_3", type: "message", role: "assistant" } },
    { type: "response.output_audio_transcript.delta", response_id: "live_resp_2", item_id: "live_item_3", delta: "Paris." },
  ]);
  assert.deepEqual(tr.fromLive({ type: "session.output_audio.delta", delta: "AAAA" }), [{ type: "response.output_audio.delta", response_id: "live_resp_2", item_id: "live_item_3", delta: "AAAA" }]);
  // the answer ends when it went quiet (LiveSocket's timer), as a completed response
  const done = tr.finish();
  assert.deepEqual(types(done), ["response.output_audio.done", "response.done"]);
  assert.deepEqual(done[1].response, {
    id: "live_resp_2",
    object: "realtime.response",
    status: "completed",
    output: [{ id: "live_item_3", type: "message", role: "assistant", status: "completed", content: [{ type: "output_audio", transcript: "Paris." }] }],
  });
  assert.deepEqual(tr.finish(), []);
});

test("words over an answer still playing interrupt it: speech_started, then the answer cancelled", () => {
  const tr = started();
  tr.fromLive({ type: "session.output_audio.delta", delta: "AAAA" });
  const barge = tr.fromLive({ type: "session.input_transcript.delta", delta: "Stop.", start_ms: 900, end_ms: 1300 }, { playing: true });
  assert.deepEqual(types(barge), ["input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped", "response.output_audio.done", "response.done", "conversation.item.input_audio_transcription.delta"]);
  assert.equal(barge[3].response.status, "cancelled");
  assert.equal(barge[3].response.output[0].status, "incomplete");
  assert.deepEqual(barge[3].response.status_details, { type: "cancelled", reason: "turn_detected" });
});

test("errors keep the client event they answer where the page looks for it", () => {
  const tr = started();
  const [err] = tr.fromLive({ type: "error", client_event_id: "c1", error: { type: "invalid_request_error", code: "delegation_not_found", message: "no", client_event_id: "c1" } });
  assert.deepEqual(err.error, { type: "invalid_request_error", code: "delegation_not_found", message: "no", client_event_id: "c1", event_id: "c1" });
});

test("a client delegation: created, thinking and commentary (which finishes it), at their times", () => {
  const tr = started();
  const created = { type: "session.delegation.created", delegation: { id: "deleg_1", target: "client", type: "delegation" }, offset_ms: 3000 };
  const out = tr.fromLive(created);
  assert.deepEqual(out, [{ type: "live.delegation", change: "created", delegation: { id: "deleg_1", target: "client", created: 3000, thinking: [], commentary: null, done: null } }, created]);
  const thinking = tr.fromLive({ type: "session.thinking.appended", start_ms: 3500, end_ms: 3500 });
  assert.deepEqual(thinking[0], { type: "live.delegation", change: "thinking", delegation: { id: "deleg_1", target: "client", created: 3000, thinking: [3500], commentary: null, done: null } });
  const said = tr.fromLive({ type: "session.commentary.appended", start_ms: 4200, end_ms: 4200 });
  assert.deepEqual(said.map((e) => e.change), ["commentary", "done", undefined]);
  assert.deepEqual(said[1].delegation, { id: "deleg_1", target: "client", created: 3000, thinking: [3500], commentary: 4200, done: 4200 });
  // commentary with no delegation open is only passed on
  assert.deepEqual(types(tr.fromLive({ type: "session.commentary.appended", start_ms: 5000, end_ms: 5000 })), ["session.commentary.appended"]);
});

test("a server delegation ends when its backend's response does, on the session's clock", () => {
  let now = 1000;
  const tr = new LiveTranslator(() => now);
  tr.fromLive({ type: "session.started", session: RESOURCE });
  tr.fromLive({ type: "session.delegation.created", delegation: { id: "deleg_2", target: "responses", type: "delegation" }, offset_ms: 2000 });
  now = 3500;
  const thinking = tr.fromLive({ type: "response.event", delegation_id: "deleg_2", event: { type: "response.reasoning_text.delta" } });
  assert.deepEqual(thinking[0].delegation.thinking, [2500]);
  assert.equal(tr.fromLive({ type: "response.event", delegation_id: "deleg_2", event: { type: "response.output_text.delta" } }).length, 1); // passed on only
  now = 5000;
  const done = tr.fromLive({ type: "response.event", delegation_id: "deleg_2", event: { type: "response.completed" } });
  assert.deepEqual([done[0].change, done[0].delegation.done], ["done", 4000]);
  // its conclusion, appended where it is said: the commentary mark, the delegation stays done
  const said = tr.fromLive({ type: "session.commentary.appended", start_ms: 4600, end_ms: 4600 });
  assert.deepEqual(said.map((e) => e.change), ["commentary", undefined]);
  assert.deepEqual([said[0].delegation.commentary, said[0].delegation.done], [4600, 4000]);
  assert.equal(tr.fromLive({ type: "response.event", delegation_id: "deleg_9", event: { type: "response.completed" } }).length, 1);
});

test("the speech gate opens after 300 ms of loud frames over a playing answer, and only then", () => {
  const gate = new SpeechGate({ threshold: 0.03, holdMs: 300, rate: 24000 });
  const loud = new Float32Array(2400).fill(0.1); // 100 ms
  const quiet = new Float32Array(2400);
  assert.equal(gate.push(loud, true), false);
  assert.equal(gate.push(loud, true), false);
  assert.equal(gate.push(quiet, true), false); // a pause starts it over
  assert.equal(gate.push(loud, true), false);
  assert.equal(gate.push(loud, true), false);
  assert.equal(gate.push(loud, true), true);
  assert.equal(gate.push(loud, false), false); // nothing plays: nothing to stop
  for (let i = 0; i < 5; i++) assert.equal(gate.push(loud, false), false);
});
