import assert from "node:assert/strict";
import { test } from "node:test";

import { delegationBars, laneOf, timelineBars, timelineModel, timelineSvg, turnDetail } from "../../web/lib/timeline.js";

// A report as GET /v1/r1voice/sessions/{id} gives it (trimmed): one spoken turn that was
// interrupted, one typed turn whose chat span has no phases (a backend that does not say).
const stage = (name, start, duration, attributes = {}) => ({ name, start_ms: start, duration_ms: duration, attributes });
const REPORT = {
  id: "sess_1",
  items: [
    { id: "item_u", role: "user", content: [{ type: "input_audio", transcript: "what time is it" }] },
    { id: "item_a", role: "assistant", content: [{ type: "output_audio", transcript: "It is" }] },
  ],
  turns: [
    {
      number: 1,
      start_ms: 100,
      duration_ms: 2000,
      end_reason: "vad",
      was_interrupted: true,
      attributes: { "r1voice.turn.user_item": "item_u", "r1voice.turn.answer_item": "item_a" },
      stages: [
        stage("r1voice.user_speech", 100, 800),
        stage("r1voice.stt", 700, 300),
        stage("r1voice.vad", 900, 100),
        stage("chat smollm2", 1000, 400),
        stage("r1voice.llm.queue", 1000, 10),
        stage("r1voice.llm.prefill", 1010, 90),
        stage("r1voice.llm.decode", 1100, 300),
        stage("r1voice.tts", 1150, 200),
        stage("r1voice.playback", 1350, 500),
        stage("r1voice.barge_in", 1800, 50),
      ],
    },
    { number: 2, start_ms: 3000, duration_ms: 1000, end_reason: "manual", was_interrupted: false, attributes: {}, stages: [stage("chat smollm2", 3000, 600)] },
  ],
};

test("spans go to their lanes; the chat span is drawn by its phases", () => {
  assert.deepEqual(laneOf("r1voice.llm.prefill"), { lane: "llm", kind: "prefill" });
  assert.deepEqual(laneOf("execute_tool get_weather"), { lane: "llm", kind: "tool" });
  assert.equal(laneOf("chat smollm2"), null);
  const bars = timelineBars(REPORT);
  const turn1 = bars.filter((b) => b.turn === 1);
  assert.deepEqual(
    turn1.map((b) => `${b.lane}:${b.kind}`),
    ["speech:speech", "stt:pass", "turn:decision", "llm:queue", "llm:prefill", "llm:decode", "tts:clause", "playback:playback", "interrupt:barge_in", "interrupt:interrupted"],
  );
  assert.deepEqual(turn1.at(-1), { lane: "interrupt", kind: "interrupted", turn: 1, name: "interrupted", start: 2100, end: 2100 });
  // no phases: the chat span itself is the LLM's bar
  assert.deepEqual(bars.filter((b) => b.turn === 2).map((b) => [b.kind, b.start, b.end]), [["chat", 3000, 3600]]);
});

test("the model scales time to the width, one row per lane", () => {
  const m = timelineModel(REPORT, { width: 510, row: 20, pad: 110 });
  assert.equal(m.endMs, 4000);
  assert.equal(m.height, 8 * 20 + 16); // the delegation lane too
  const decode = m.bars.find((b) => b.kind === "decode");
  assert.equal(decode.x, 110 + 1100 * (396 / 4000));
  assert.equal(decode.y, m.rows.find((r) => r.key === "llm").y + 3);
  assert.deepEqual(m.turns.map((t) => t.number), [1, 2]);
});

test("the SVG names each bar's turn and escapes names", () => {
  const svg = timelineSvg({ turns: [{ number: 1, start_ms: 0, duration_ms: 10, stages: [stage('execute_tool <x>"', 0, 5)] }] });
  assert.match(svg, /data-turn="1" data-lane="llm" data-kind="tool"/);
  assert.match(svg, /execute_tool &lt;x&gt;&quot; 5 ms/);
  assert.doesNotMatch(svg, /<x>/);
});

test("a turn's detail: stages from its start, its words from the items", () => {
  const d = turnDetail(REPORT, 1);
  assert.equal(d.endReason, "vad");
  assert.equal(d.interrupted, true);
  assert.deepEqual(d.stages[1], { name: "r1voice.stt", startMs: 600, ms: 300 });
  assert.equal(d.user, "what time is it");
  assert.equal(d.answer, "It is");
  assert.equal(turnDetail(REPORT, 2).user, null);
  assert.equal(turnDetail(REPORT, 9), null);
});

// A GPT-Live delegation as the page records it (web/lib/live.js), on the session's clock.
const DELEGATION = { id: "deleg_1", target: "client", created: 1200, thinking: [1500], commentary: 2500, done: 2500 };

test("a delegation is a bar from its creation to its end, with marks where thinking and commentary came", () => {
  assert.deepEqual(
    delegationBars(DELEGATION).map((b) => [b.kind, b.start, b.end]),
    [["delegation", 1200, 2500], ["thinking", 1500, 1500], ["commentary", 2500, 2500]],
  );
  // still open: it runs to the end of what the report shows
  const open = { ...DELEGATION, thinking: [], commentary: null, done: null };
  assert.deepEqual(delegationBars(open, 3000).map((b) => [b.kind, b.start, b.end]), [["open", 1200, 3000]]);
});

test("the timeline draws a Live session's delegations on their lane, at their times", () => {
  const m = timelineModel(REPORT, { width: 510, row: 20, pad: 110, delegations: [DELEGATION] });
  const lane = m.rows.find((r) => r.key === "delegation");
  const bars = m.bars.filter((b) => b.lane === "delegation");
  assert.deepEqual(bars.map((b) => [b.kind, b.x, b.y, b.color]), [
    ["delegation", 110 + 1200 * (396 / 4000), lane.y + 3, "#b7791f"],
    ["thinking", 110 + 1500 * (396 / 4000), lane.y + 3, "#d69e2e"],
    ["commentary", 110 + 2500 * (396 / 4000), lane.y + 3, "#2f855a"],
  ]);
  assert.equal(bars[1].w, 2); // a mark stays visible
  const svg = timelineSvg(REPORT, { delegations: [DELEGATION] });
  assert.match(svg, /data-lane="delegation" data-kind="delegation"[^>]*><title>delegation deleg_1 \(client\): 1200 ms–2500 ms<\/title>/);
});
