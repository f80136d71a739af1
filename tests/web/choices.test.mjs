import assert from "node:assert/strict";
import { test } from "node:test";

import { Choices } from "../../web/lib/choices.js";

test("a confirmed choice is remembered for the next session", () => {
  const c = new Choices();
  assert.equal(c.wanted(), null);
  c.propose("tts", "espeak-ng", "evt_1", { voice: "espeak-ng" });
  assert.equal(c.wanted(), null, "not before the server confirms it");
  assert.equal(c.settle("tts", "espeak-ng"), "used");
  assert.deepEqual(c.wanted(), { voice: "espeak-ng" });
  assert.equal(c.settle("tts", "espeak-ng"), null, "nothing pending any more");
});

test("a session that kept another component settles the choice without remembering it", () => {
  const c = new Choices();
  c.propose("asr", "whisper-base", "evt_1", { transcriptionModel: "whisper-base" });
  assert.equal(c.settle("asr", "whisper-tiny.en"), "kept");
  assert.equal(c.wanted(), null);
  assert.equal(c.settle("asr", "whisper-tiny.en"), null);
});

test("choices made offline and in the settings add up, later ones win", () => {
  const c = new Choices();
  c.remember({ voice: "a", speed: 1 });
  c.remember({ voice: "b" });
  assert.deepEqual(c.wanted(), { voice: "b", speed: 1 });
  c.wanted().voice = "changed";
  assert.deepEqual(c.wanted(), { voice: "b", speed: 1 }, "a copy");
});

test("an error refuses the choice it answers, by event id or else by the field it names", () => {
  const c = new Choices();
  c.propose("tts", "x", "evt_1", { voice: "x" });
  c.propose("turn", "semantic_vad", "evt_2", { turnDetection: { type: "semantic_vad" } });
  assert.equal(c.refuse("evt_other", "session.instructions"), null);
  assert.deepEqual(c.refuse("evt_2", "session.voice"), { slot: "turn", key: "semantic_vad", others: [] });
  assert.deepEqual(c.refuse(null, "session.audio.output.voice"), { slot: "tts", key: "x", others: [] });
  assert.equal(c.refuse(null, "session.audio.output.voice"), null, "no longer pending");
  assert.equal(c.settle("tts", "x"), null);
  assert.equal(c.wanted(), null, "a refused choice is not remembered");
});

test("several choices in one event: an error refuses the one whose field it names, and returns the others to send again", () => {
  const c = new Choices();
  c.propose("asr", "whisper-base", "evt_zh", { transcriptionModel: "whisper-base" });
  c.propose("llm", "qwen", "evt_zh", { llm: "qwen" });
  c.propose("tts", "auto", "evt_zh", { voice: "auto" });
  assert.ok(c.isPending("llm"));
  const refused = c.refuse("evt_zh", "session.model");
  assert.deepEqual(refused, {
    slot: "llm",
    key: "qwen",
    others: [
      { slot: "asr", key: "whisper-base", fields: { transcriptionModel: "whisper-base" } },
      { slot: "tts", key: "auto", fields: { voice: "auto" } },
    ],
  });
  // the server refused the update whole: nothing of it is pending or remembered
  for (const slot of ["asr", "llm", "tts"]) assert.ok(!c.isPending(slot), slot);
  assert.equal(c.wanted(), null);
  // sent again without the refused one, they settle when that update is confirmed
  for (const o of refused.others) c.propose(o.slot, o.key, "evt_again", o.fields);
  assert.equal(c.settle("asr", "whisper-base"), "used");
  assert.equal(c.settle("tts", "auto"), "used");
  assert.deepEqual(c.wanted(), { transcriptionModel: "whisper-base", voice: "auto" });
});

test("a field the server refused is not asked for again", () => {
  const c = new Choices();
  c.remember({ transcriptionLanguage: "zh", speed: 1 });
  c.forget("transcriptionLanguage");
  assert.deepEqual(c.wanted(), { speed: 1 });
});
