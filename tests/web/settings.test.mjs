import assert from "node:assert/strict";
import { test } from "node:test";

import { formFields, formValues } from "../../web/lib/settings.js";

const PALETTES = { turn: [{ key: "server_vad", available: true }, { key: "semantic_vad", available: false }] };

test("the form shows the session; knobs the session does not set are left out", () => {
  const view = { instructions: "Be brief.", speed: 1.5, temperature: 0.7, turnDetection: { type: "server_vad", silence_duration_ms: 400 } };
  assert.deepEqual(formValues(view, PALETTES), { instructions: "Be brief.", speed: 1.5, turn: "server_vad", language: "auto", silence: 400, idle: "off", temperature: 0.7, semanticAvailable: false });
  assert.deepEqual(formValues({ turnDetection: null }, null), { instructions: "", speed: 1, turn: "none", language: "auto", idle: "off", semanticAvailable: false });
  const semantic = { turnDetection: { type: "semantic_vad", eagerness: "low" } };
  const available = { turn: [{ key: "semantic_vad", available: true }] };
  assert.deepEqual(formValues(semantic, available), { instructions: "", speed: 1, turn: "semantic_vad", language: "auto", eagerness: "low", idle: "off", semanticAvailable: true });
});

test("server VAD keeps the session's knobs and takes the form's silence", () => {
  const view = { turnDetection: { type: "server_vad", threshold: 0.6, silence_duration_ms: 500, eagerness: "auto" } };
  const values = { turn: "server_vad", silence: "800", eagerness: "high", instructions: "x", speed: "1.25", temperature: "0.5" };
  assert.deepEqual(formFields(values, view), { instructions: "x", speed: 1.25, turnDetection: { type: "server_vad", threshold: 0.6, silence_duration_ms: 800 }, temperature: 0.5, transcriptionLanguage: null });
  const fromSemantic = formFields(values, { turnDetection: { type: "semantic_vad", eagerness: "low" } });
  assert.deepEqual(fromSemantic.turnDetection, { type: "server_vad", silence_duration_ms: 800 });
});

test("semantic VAD sends only its eagerness; manual sends null", () => {
  const values = { turn: "semantic_vad", silence: "800", eagerness: "high", instructions: "", speed: "1", temperature: "0" };
  assert.deepEqual(formFields(values, { turnDetection: { type: "server_vad", threshold: 0.6 } }).turnDetection, { type: "semantic_vad", eagerness: "high" });
  assert.equal(formFields({ ...values, turn: "none" }, {}).turnDetection, null);
});

test("the speech language: the session's, or auto-detect; sent as the transcription language", () => {
  assert.equal(formValues({ transcriptionLanguage: "zh" }, null).language, "zh");
  assert.equal(formValues({ transcriptionLanguage: null }, null).language, "auto");
  const values = { turn: "none", instructions: "", speed: "1", temperature: "0" };
  assert.equal(formFields({ ...values, language: "zh" }, {}).transcriptionLanguage, "zh");
  assert.equal(formFields({ ...values, language: "auto" }, {}).transcriptionLanguage, null);
});

test("the idle nudge: shown as the nearest choice, sent as idle_timeout_ms on either VAD, left out when off", () => {
  const at = (ms) => formValues({ turnDetection: { type: "server_vad", idle_timeout_ms: ms } }, null).idle;
  assert.deepEqual([at(5000), at(7000), at(10000), at(30000), at(null)], ["5", "10", "10", "30", "off"]);
  const values = { turn: "server_vad", silence: "500", eagerness: "auto", instructions: "", speed: "1", temperature: "0" };
  const kept = { turnDetection: { type: "server_vad", silence_duration_ms: 500, idle_timeout_ms: 10000 } };
  assert.equal(formFields({ ...values, idle: "5" }, kept).turnDetection.idle_timeout_ms, 5000);
  assert.equal("idle_timeout_ms" in formFields({ ...values, idle: "off" }, kept).turnDetection, false);
  assert.equal(formFields({ ...values, turn: "semantic_vad", idle: "30" }, kept).turnDetection.idle_timeout_ms, 30000);
  assert.equal(formFields({ ...values, turn: "none", idle: "30" }, kept).turnDetection, null);
});
