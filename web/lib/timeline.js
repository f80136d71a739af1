// A session's timeline from its report (GET /v1/r1voice/sessions/{id}: the session's own
// spans, grouped by turn): lanes over time for the user's speech, the VAD and turn
// decisions, transcription passes, the LLM's queue / prefill / decode, TTS clauses, the
// answer's playback and interruptions, and a GPT-Live session's delegations (the page's
// own record of them, on the session's clock); a turn's stages in milliseconds and its words.
// (The lanes' labels below are the English ones; the SVG shows the page's language.)

import { t } from "./i18n.js";

export const LANES = [
  { key: "speech", label: "User speech", color: "#2b6cb0" },
  { key: "turn", label: "VAD / turn", color: "#4a5568" },
  { key: "stt", label: "Transcription", color: "#3182ce" },
  { key: "llm", label: "LLM", color: "#805ad5" },
  { key: "tts", label: "TTS", color: "#dd6b20" },
  { key: "playback", label: "Playback", color: "#38a169" },
  { key: "interrupt", label: "Interruptions", color: "#e53e3e" },
  { key: "delegation", label: "Delegations", color: "#b7791f" },
];

const DELEGATION_COLORS = { thinking: "#d69e2e", commentary: "#2f855a" };

/** A delegation's bars (turn 0: no turn's): from its creation to its end (to `nowMs`
 *  while open), and a mark where each thinking and its commentary were appended. */
export function delegationBars(d, nowMs) {
  const end = d.done ?? Math.max(d.created, nowMs ?? d.created);
  const mark = (kind, at) => ({ lane: "delegation", kind, turn: 0, name: `${kind} ${d.id}`, start: at, end: at });
  const bars = [{ lane: "delegation", kind: d.done === null ? "open" : "delegation", turn: 0, name: `delegation ${d.id} (${d.target})`, start: d.created, end }];
  for (const at of d.thinking) bars.push(mark("thinking", at));
  if (d.commentary !== null) bars.push(mark("commentary", d.commentary));
  return bars;
}

const PHASE_COLORS = { queue: "#b794f4", prefill: "#805ad5", decode: "#553c9a" };

/** The lane of a span (by its name), and its kind within the lane; null: not drawn. */
export function laneOf(name) {
  if (name === "r1voice.user_speech") return { lane: "speech", kind: "speech" };
  if (name === "r1voice.vad") return { lane: "turn", kind: "decision" };
  if (name === "r1voice.stt") return { lane: "stt", kind: "pass" };
  if (name.startsWith("r1voice.llm.")) return { lane: "llm", kind: name.slice("r1voice.llm.".length) };
  if (name.startsWith("execute_tool ")) return { lane: "llm", kind: "tool" };
  if (name === "r1voice.tts") return { lane: "tts", kind: "clause" };
  if (name === "r1voice.playback") return { lane: "playback", kind: "playback" };
  if (name === "r1voice.barge_in") return { lane: "interrupt", kind: "barge_in" };
  return null; // the chat span itself: its phases are drawn
}

/** Every bar of the report: {lane, kind, turn, start, end, name} in ms since the session
 *  began; an interrupted turn adds a mark where it ended. */
export function timelineBars(report) {
  const bars = [];
  for (const turn of report.turns || []) {
    const stages = turn.stages || [];
    const phases = stages.some((s) => s.name.startsWith("r1voice.llm."));
    for (const stage of stages) {
      let where = laneOf(stage.name);
      if (!where && stage.name.startsWith("chat ") && !phases) where = { lane: "llm", kind: "chat" };
      if (!where) continue;
      bars.push({ ...where, turn: turn.number, name: stage.name, start: stage.start_ms, end: stage.start_ms + stage.duration_ms });
    }
    if (turn.was_interrupted) {
      const end = turn.start_ms + turn.duration_ms;
      bars.push({ lane: "interrupt", kind: "interrupted", turn: turn.number, name: "interrupted", start: end, end });
    }
  }
  return bars;
}

/** Pixels: one row per lane, time scaled to `width` (labels in the first `pad`);
 *  `delegations`: a Live session's, drawn on their lane. */
export function timelineModel(report, { width = 720, row = 18, pad = 110, delegations = [] } = {}) {
  const reported = timelineBars(report);
  const reportEnd = Math.max(0, ...reported.map((b) => b.end));
  const bars = [...reported, ...delegations.flatMap((d) => delegationBars(d, reportEnd))];
  const turns = report.turns || [];
  const endMs = Math.max(1, ...bars.map((b) => b.end), ...turns.map((t) => t.start_ms + t.duration_ms));
  const scale = (width - pad - 4) / endMs;
  const rows = LANES.map((lane, i) => ({ ...lane, y: i * row }));
  const y = Object.fromEntries(rows.map((r) => [r.key, r.y]));
  const color = Object.fromEntries(LANES.map((l) => [l.key, l.color]));
  return {
    width,
    height: rows.length * row + 16,
    endMs,
    rows,
    turns: turns.map((t) => ({ number: t.number, x: pad + t.start_ms * scale, w: Math.max(1, t.duration_ms * scale) })),
    bars: bars.map((b) => ({
      ...b,
      x: pad + b.start * scale,
      w: Math.max(b.kind === "interrupted" || b.lane === "delegation" ? 2 : 1, (b.end - b.start) * scale),
      y: y[b.lane] + 3,
      h: row - 6,
      color: (b.lane === "llm" && PHASE_COLORS[b.kind]) || (b.lane === "delegation" && DELEGATION_COLORS[b.kind]) || color[b.lane],
    })),
  };
}

const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
const ms = (v) => `${Math.round(v)} ms`;

/** The timeline as SVG; each bar carries data-turn, so a click names its turn. */
export function timelineSvg(report, opts = {}) {
  const m = timelineModel(report, opts);
  const parts = [`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${m.width} ${m.height}" role="img" aria-label="Session timeline, ${m.turns.length} turns">`];
  for (const t of m.turns) {
    parts.push(`<rect class="turn" data-turn="${t.number}" x="${t.x.toFixed(1)}" y="0" width="${t.w.toFixed(1)}" height="${m.height - 16}" fill="#edf2f7"><title>Turn ${t.number}</title></rect>`);
  }
  for (const r of m.rows) parts.push(`<text x="2" y="${r.y + 13}" class="tick">${esc(t(`timeline.lane.${r.key}`))}</text>`);
  for (const b of m.bars) {
    const title = b.turn ? `Turn ${b.turn}: ${b.name} ${ms(b.end - b.start)}` : `${b.name}: ${ms(b.start)}–${ms(b.end)}`;
    parts.push(`<rect data-turn="${b.turn}" data-lane="${b.lane}" data-kind="${esc(b.kind)}" x="${b.x.toFixed(1)}" y="${b.y}" width="${b.w.toFixed(1)}" height="${b.h}" fill="${b.color}"><title>${esc(title)}</title></rect>`);
  }
  parts.push(`<text x="${m.width - 2}" y="${m.height - 3}" text-anchor="end" class="tick">${(m.endMs / 1000).toFixed(1)} s</text>`);
  parts.push("</svg>");
  return parts.join("");
}

function itemWords(item) {
  const part = ((item && item.content) || [])[0] || {};
  return part.transcript ?? part.text ?? null;
}

/** Turn `number`: how it ended, each stage's milliseconds (in order), and its words (from
 *  the report's items; the spans carry ids only unless the server traces content). */
export function turnDetail(report, number) {
  const turn = (report.turns || []).find((t) => t.number === number);
  if (!turn) return null;
  const attrs = turn.attributes || {};
  const items = Object.fromEntries((report.items || []).map((i) => [i.id, i]));
  const user = items[attrs["r1voice.turn.user_item"]];
  const answer = items[attrs["r1voice.turn.answer_item"]];
  return {
    number,
    endReason: turn.end_reason,
    interrupted: turn.was_interrupted === true,
    ms: turn.duration_ms,
    stages: (turn.stages || []).map((s) => ({ name: s.name, startMs: s.start_ms - turn.start_ms, ms: s.duration_ms })),
    user: attrs["r1voice.transcript"] ?? (user ? itemWords(user) : null),
    answer: attrs["r1voice.answer"] ?? (answer ? itemWords(answer) : null),
  };
}
