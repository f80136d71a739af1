import assert from "node:assert/strict";
import { test } from "node:test";

import { answerFailure, answerItems, answerOutcome, responseVoice, Responses } from "../../web/lib/responses.js";

test("the voice of a response: its own (GA, then beta), else the session's", () => {
  assert.equal(responseVoice({ audio: { output: { voice: "piper" } }, voice: "x" }, "s"), "piper");
  assert.equal(responseVoice({ voice: "alloy" }, "s"), "alloy");
  assert.equal(responseVoice({}, "espeak-ng"), "espeak-ng");
  assert.equal(responseVoice({}, undefined), null);
  assert.equal(responseVoice(undefined, undefined), null);
});

test("a response from created to done", () => {
  const r = new Responses();
  r.start("resp_1", "piper");
  assert.equal(r.active, "resp_1");
  assert.deepEqual(r.get("resp_1"), { id: "resp_1", voice: "piper", status: "in_progress", itemId: null });
  assert.equal(r.setItem("resp_1", "item_1").itemId, "item_1");
  assert.equal(r.setItem("resp_unknown", "item_2"), undefined);
  const done = r.finish({ id: "resp_1", status: "completed" }, undefined);
  assert.deepEqual(done, { id: "resp_1", voice: "piper", status: "completed", itemId: "item_1" });
  assert.equal(r.active, null);
});

test("done: the response's own voice wins over the one it started with, the session's too", () => {
  const r = new Responses();
  r.start("resp_1", "piper");
  assert.equal(r.finish({ id: "resp_1", status: "completed", voice: "alloy" }, "s").voice, "alloy");
  r.start("resp_2", "piper");
  assert.equal(r.finish({ id: "resp_2", status: "completed" }, "espeak-ng").voice, "espeak-ng");
  assert.deepEqual(r.finish({ id: "resp_3", status: "failed" }, undefined), { id: "resp_3", status: "failed", voice: undefined });
});

test("a barge-in stops the active response's audio; its cut is kept for the truncate", () => {
  const r = new Responses();
  r.interrupt();
  assert.equal(r.stopped.size, 0, "nothing active: nothing stopped");
  r.start("resp_1", null);
  r.interrupt();
  assert.ok(r.isStopped("resp_1"));
  assert.ok(!r.isStopped("resp_2"));
  r.cutAt("resp_1", 1250);
  assert.equal(r.get("resp_1").truncateAt, 1250);
  r.start("resp_2", null);
  r.finish({ id: "resp_1", status: "cancelled" });
  assert.equal(r.active, "resp_2", "an older response's done leaves the newer one active");
  r.clearActive();
  assert.equal(r.active, null);
});

test("answer items are the messages of the output", () => {
  const output = [{ id: "a", type: "message" }, { id: "f", type: "function_call" }, { id: "b" }];
  assert.deepEqual(answerItems({ output }).map((i) => i.id), ["a", "b"]);
  assert.deepEqual(answerItems({}), []);
});

test("how an answer ends: completed, or interrupted with what was heard", () => {
  const item = { id: "i", content: [{ transcript: "Paris is the capital." }] };
  assert.deepEqual(answerOutcome({ status: "completed" }, item, "piper", 3000), { interrupted: false, status: "completed", heard: "Paris is the capital.", meta: "voice piper", reason: undefined });
  const cancelled = { status: "cancelled", status_details: { reason: "turn_detected" } };
  assert.deepEqual(answerOutcome(cancelled, { id: "i", content: [{ text: "Once" }] }, null, 1234), { interrupted: true, status: "cancelled", heard: "Once", meta: "heard 1.2 s", reason: "turn_detected" });
  const incomplete = answerOutcome({ status: "completed" }, { id: "i", status: "incomplete" }, "a", 0);
  assert.deepEqual([incomplete.status, incomplete.heard, incomplete.meta], ["cancelled", undefined, "voice a · heard 0.0 s"]);
});

test("an answer cut at max_output_tokens is whole, not interrupted", () => {
  const cut = { status: "incomplete", status_details: { type: "incomplete", reason: "max_output_tokens" } };
  const item = { id: "i", status: "incomplete", content: [{ transcript: "Paris is" }] };
  assert.deepEqual(answerOutcome(cut, item, "piper", 900), { interrupted: false, status: "incomplete", heard: "Paris is", meta: "voice piper · cut at max_output_tokens", reason: "max_output_tokens" });
});

test("a failed answer: busy, a note, or nothing more", () => {
  assert.equal(answerFailure({ status: "completed" }), null);
  assert.equal(answerFailure({ status: "failed", status_details: { error: { code: "server_busy" } } }), "busy");
  assert.equal(answerFailure({ status: "failed", status_details: { error: { code: "tts_failed", message: "x" } } }), null);
  assert.deepEqual(answerFailure({ status: "failed", status_details: { error: { code: "llm_error", message: "boom" } } }), { note: "The answer failed: boom" });
  assert.deepEqual(answerFailure({ status: "failed" }), { note: "The answer failed: unknown error" });
});

test("an answer paused by a backchannel or by no words plays again when it resumes", () => {
  const r = new Responses();
  r.start("resp_1", null);
  r.interrupt(); // speech_started: the answer paused, its queued audio dropped
  assert.ok(r.isStopped("resp_1"));
  r.resume(); // r1voice.interruption: backchannel / no_words
  assert.ok(!r.isStopped("resp_1"));
});
