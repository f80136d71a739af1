import assert from "node:assert/strict";
import { test } from "node:test";

import { chartModel, chartSvg, metricsLine, niceMax, turnSegments } from "../../web/lib/chart.js";

const turn = (t, k, a) => ({ speech_stopped_to_transcript_ms: t, speech_stopped_to_first_token_ms: k, speech_stopped_to_first_audio_ms: a });

test("stage segments add up to voice-to-voice", () => {
  assert.deepEqual(turnSegments(turn(400, 700, 900)), { asr: 400, llm: 300, tts: 200, total: 900 });
});

test("an answer started before the turn ended costs the LLM no extra time", () => {
  // the early-answer gate: first token before the final transcript
  assert.deepEqual(turnSegments(turn(500, 300, 650)), { asr: 500, llm: 0, tts: 150, total: 650 });
  // negative times (clock noise) become 0
  assert.deepEqual(turnSegments(turn(-5, 100, 200)), { asr: 0, llm: 100, tts: 100, total: 200 });
});

test("missing stages (a text-only answer, a failed turn)", () => {
  assert.deepEqual(turnSegments(turn(400, 700, null)), { asr: 400, llm: 300, tts: null, total: 700 });
  assert.deepEqual(turnSegments(turn(400, null, null)), { asr: 400, llm: null, tts: null, total: 400 });
  assert.deepEqual(turnSegments({}), { asr: null, llm: null, tts: null, total: null });
});

test("nice axis maxima", () => {
  assert.equal(niceMax(0), 100);
  assert.equal(niceMax(870), 1000);
  assert.equal(niceMax(1200), 2000);
  assert.equal(niceMax(2100), 2500);
  assert.equal(niceMax(4000), 5000);
  assert.equal(niceMax(5000), 5000);
});

test("bars stack per stage, scaled to the axis", () => {
  const m = chartModel([turn(400, 700, 900), turn(200, 400, 500)], { width: 600, height: 160 });
  assert.equal(m.max, 1000);
  assert.equal(m.bars.length, 2);
  const [first] = m.bars;
  assert.deepEqual(first.rects.map((r) => r.stage), ["asr", "llm", "tts"]);
  const plotH = m.plotBottom - m.plotTop;
  assert.ok(Math.abs(first.rects.reduce((h, r) => h + r.h, 0) - 0.9 * plotH) < 1e-9);
  // stacked: each rect sits on the previous one
  assert.ok(Math.abs(first.rects[0].y - first.rects[1].y - first.rects[1].h) < 1e-9);
  assert.ok(Math.abs(first.rects[0].y + first.rects[0].h - m.plotBottom) < 1e-9);
  assert.ok(m.bars[1].x > first.x);
});

test("only the last turns are shown, numbered as in the session", () => {
  const turns = Array.from({ length: 25 }, (_, i) => turn(100, 200, 300 + i));
  const m = chartModel(turns, { maxTurns: 20 });
  assert.equal(m.bars.length, 20);
  assert.equal(m.bars[0].turn, 6);
  assert.equal(m.bars.at(-1).turn, 25);
});

test("the SVG: one group per turn, a title per bar, an accessible label", () => {
  const svg = chartSvg([turn(400, 700, 900), turn(300, 500, null)]);
  assert.match(svg, /^<svg [^>]*role="img"/);
  assert.match(svg, /aria-label="Voice-to-voice latency of the last 2 turns; last turn 500 ms"/);
  assert.equal((svg.match(/<g class="bar"/g) || []).length, 2);
  assert.equal((svg.match(/<rect /g) || []).length, 5);
  assert.match(svg, /<title>Turn 1: ASR 400 ms, LLM 300 ms, TTS 200 ms; total 900 ms<\/title>/);
  assert.match(svg, /TTS –; total 500 ms/);
  assert.match(chartSvg([]), /No voice turns yet/);
});

test("the last turn's latencies in one line, a dash where a stage did not run", () => {
  assert.equal(metricsLine(turn(412.4, 803.6, 1190)), "end of speech → transcript 412 ms · first token 804 ms · first audio 1190 ms");
  assert.equal(metricsLine(turn(0, null, undefined)), "end of speech → transcript 0 ms · first token – ms · first audio – ms");
});
