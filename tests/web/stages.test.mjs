import assert from "node:assert/strict";
import { test } from "node:test";

import { IDLE, nextStages, StageTracker } from "../../web/lib/stages.js";

const run = (inputs, from = IDLE) => inputs.reduce((s, i) => nextStages(s, typeof i === "string" ? { type: i } : i), from);

test("a hands-free voice turn moves through the stages", () => {
  let s = run([{ type: "mic", on: true }]);
  assert.equal(s.asr, "listening");
  s = run(["input_audio_buffer.speech_started"], s);
  assert.equal(s.asr, "hearing");
  s = run(["input_audio_buffer.speech_stopped"], s);
  assert.equal(s.asr, "transcribing");
  s = run(["response.created"], s);
  assert.equal(s.llm, "thinking");
  s = run(["conversation.item.input_audio_transcription.completed"], s);
  assert.equal(s.asr, "listening");
  s = run(["response.output_audio_transcript.delta", "response.output_audio.delta"], s);
  assert.equal(s.llm, "writing");
  assert.equal(s.tts, "speaking");
  s = run([{ type: "playing", on: true }, "response.output_audio_transcript.done"], s);
  assert.equal(s.llm, "idle");
  s = run(["response.done"], s);
  assert.equal(s.tts, "speaking", "still playing what was sent");
  s = run([{ type: "playing", on: false }], s);
  assert.deepEqual([s.asr, s.llm, s.tts], ["listening", "idle", "idle"]);
  s = run([{ type: "mic", on: false }], s);
  assert.equal(s.asr, "idle");
});

test("speech during transcription keeps hearing; closing the mic then is idle", () => {
  let s = run([{ type: "mic", on: true }, "input_audio_buffer.speech_started", "conversation.item.input_audio_transcription.completed"]);
  assert.equal(s.asr, "hearing");
  s = run([{ type: "mic", on: false }, "input_audio_buffer.committed", "response.done"], s);
  assert.equal(s.asr, "idle");
});

test("reasoning is thinking; unknown events change nothing", () => {
  const s = run(["response.created", "r1voice.reasoning.delta"]);
  assert.equal(s.llm, "thinking");
  assert.equal(nextStages(s, { type: "rate_limits.updated" }), s);
});

test("reset keeps the microphone", () => {
  const s = run([{ type: "mic", on: true }, "response.created", { type: "reset" }]);
  assert.deepEqual([s.asr, s.llm, s.tts, s.mic], ["listening", "idle", "idle", true]);
});

test("the tracker keeps the stages and reports each change", () => {
  const seen = [];
  const t = new StageTracker((s) => seen.push(s));
  assert.deepEqual(t.state, IDLE);
  t.update({ type: "mic", on: true });
  t.update({ type: "input_audio_buffer.speech_started" });
  assert.deepEqual(seen.map((s) => s.asr), ["listening", "hearing"]);
  assert.equal(t.state.mic, true);
  t.reset();
  assert.deepEqual(t.state, IDLE);
  assert.equal(seen.length, 3);
  assert.deepEqual(seen[2], IDLE);
});
