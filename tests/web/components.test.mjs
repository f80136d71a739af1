import assert from "node:assert/strict";
import { test } from "node:test";

import { accepts, currentKey, fieldsFor, palettes, slotDragType, slotFromDragTypes, turnDetectionValue } from "../../web/lib/components.js";
import { Backoff } from "../../web/lib/backoff.js";

const BODY = {
  ready: true,
  asr: [{ id: "whisper-tiny.en", label: "whisper-tiny.en", available: true, active: true }, { id: "whisper-base", available: false, reason: "not loaded" }],
  turn_detection: [{ id: "server_vad", available: true }, { id: null, available: true }, { id: "semantic_vad", available: false, reason: "not implemented yet" }],
  llm: [
    { id: "smollm2-135m-instruct", available: true, active: true },
    { id: "qwen2.5-coder-0.5b-instruct", available: true, active: false },
  ],
  tts: [{ id: "piper", available: true }, { id: "espeak-ng", available: true }],
};

test("palettes per slot; the manual entry gets a key", () => {
  const p = palettes(BODY);
  assert.deepEqual(Object.keys(p).sort(), ["asr", "llm", "tts", "turn"]);
  assert.deepEqual(p.turn.map((r) => r.key), ["server_vad", "none", "semantic_vad"]);
  assert.equal(p.turn[1].id, null);
  assert.deepEqual(palettes({}).tts, []);
});

test("which card takes which component", () => {
  assert.ok(accepts("tts", "tts"));
  assert.ok(accepts("input", "asr") && accepts("input", "turn"));
  assert.ok(!accepts("tts", "asr"));
  assert.ok(!accepts("llm", "tts"));
});

test("a drop becomes session fields", () => {
  assert.deepEqual(fieldsFor("tts", "espeak-ng"), { voice: "espeak-ng" });
  assert.deepEqual(fieldsFor("asr", "whisper-base"), { transcriptionModel: "whisper-base" });
  assert.deepEqual(fieldsFor("turn", null), { turnDetection: null });
  assert.deepEqual(fieldsFor("turn", "server_vad", { turnDetection: { type: "server_vad", silence_duration_ms: 800, create_response: true } }), {
    turnDetection: { type: "server_vad", silence_duration_ms: 800 },
  });
  assert.deepEqual(fieldsFor("llm", "qwen2.5-coder-0.5b-instruct"), { llm: "qwen2.5-coder-0.5b-instruct" });
  assert.deepEqual(turnDetectionValue("semantic_vad", null), { type: "semantic_vad" });
  // semantic VAD chooses its own silence window: server VAD's knobs are not carried over
  assert.deepEqual(turnDetectionValue("semantic_vad", { type: "server_vad", silence_duration_ms: 500 }), { type: "semantic_vad" });
  assert.deepEqual(turnDetectionValue("semantic_vad", { type: "semantic_vad", eagerness: "low", silence_duration_ms: 1200 }), { type: "semantic_vad", eagerness: "low" });
  assert.deepEqual(turnDetectionValue("server_vad", { type: "semantic_vad", eagerness: "low", silence_duration_ms: 1200 }), { type: "server_vad" });
  assert.equal(turnDetectionValue("none"), null);
});

test("the card shows the session's current choice", () => {
  const p = palettes(BODY);
  const view = { voice: "espeak-ng", transcriptionModel: "whisper-tiny.en", turnDetection: null };
  assert.equal(currentKey("tts", view), "espeak-ng");
  assert.equal(currentKey("asr", view), "whisper-tiny.en");
  assert.equal(currentKey("turn", view), "none");
  assert.equal(currentKey("turn", { turnDetection: { type: "server_vad" } }), "server_vad");
  assert.equal(currentKey("llm", view, p.llm), "smollm2-135m-instruct"); // not told: the default
  assert.equal(currentKey("llm", { llm: "qwen2.5-coder-0.5b-instruct" }, p.llm), "qwen2.5-coder-0.5b-instruct");
});

test("the slot travels in a MIME type readable during dragover", () => {
  assert.equal(slotFromDragTypes(["text/plain", slotDragType("tts")]), "tts");
  assert.equal(slotFromDragTypes(["Files"]), null);
  assert.equal(slotFromDragTypes(undefined), null);
});

test("reconnect backoff grows, is capped, and resets", () => {
  const b = new Backoff({ base: 500, cap: 4000, random: () => 1 });
  assert.deepEqual([b.next(), b.next(), b.next(), b.next(), b.next()], [500, 1000, 2000, 4000, 4000]);
  b.reset();
  assert.equal(b.next(), 500);
  const low = new Backoff({ base: 500, cap: 4000, random: () => 0 });
  assert.equal(low.next(), 250, "jitter keeps at least half");
});
