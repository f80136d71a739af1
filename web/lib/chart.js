// The per-turn latency chart: from `r1voice.turn.metrics` (milliseconds from the end of
// speech to the final transcript, the first LLM token and the first audio byte) to
// stacked bars ASR | LLM | TTS whose total is the voice-to-voice latency, drawn as SVG.
import { t } from "./i18n.js";

export const STAGES = [
  { key: "asr", label: "ASR", color: "#3182ce" },
  { key: "llm", label: "LLM", color: "#805ad5" },
  { key: "tts", label: "TTS", color: "#dd6b20" },
];

const num = (v) => (typeof v === "number" && Number.isFinite(v) ? v : null);

/** One turn's metrics -> per-stage milliseconds (never negative: an answer may start
 *  before the turn is over, then a later stage took no extra time) and the total. */
export function turnSegments(metrics) {
  const transcript = num(metrics.speech_stopped_to_transcript_ms);
  const token = num(metrics.speech_stopped_to_first_token_ms);
  const audio = num(metrics.speech_stopped_to_first_audio_ms);
  const asr = transcript === null ? null : Math.max(0, transcript);
  const llm = token === null ? null : Math.max(0, token - (asr ?? 0));
  const tts = audio === null ? null : Math.max(0, audio - Math.max(asr ?? 0, token ?? 0));
  const total = audio !== null ? Math.max(0, audio) : token !== null ? Math.max(0, token) : asr;
  return { asr, llm, tts, total };
}

/** A "nice" axis maximum >= v (1, 2, 2.5, 5 x 10^k). */
export function niceMax(v) {
  if (!(v > 0)) return 100;
  const exp = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * exp >= v) return m * exp;
  return 10 * exp;
}

/** Bars (one per turn, the last `maxTurns`) with stacked stage rectangles in pixels. */
export function chartModel(turns, { width = 600, height = 160, maxTurns = 20, pad = 40 } = {}) {
  const shown = turns.slice(-maxTurns).map((t, i, arr) => ({
    turn: turns.length - arr.length + i + 1,
    ...turnSegments(t),
  }));
  const max = niceMax(Math.max(0, ...shown.map((t) => t.total ?? 0)));
  const plotH = height - pad * 1.5;
  const slot = (width - pad) / Math.max(shown.length, 8);
  const barW = Math.max(4, slot * 0.6);
  const bars = shown.map((t, i) => {
    const x = pad + i * slot + (slot - barW) / 2;
    let y = pad / 2 + plotH;
    const rects = [];
    for (const stage of STAGES) {
      const ms = t[stage.key];
      if (!ms) continue;
      const h = (ms / max) * plotH;
      y -= h;
      rects.push({ stage: stage.key, color: stage.color, ms, x, y, w: barW, h });
    }
    return { turn: t.turn, total: t.total, x, w: barW, top: y, rects };
  });
  return { width, height, max, bars, plotTop: pad / 2, plotBottom: pad / 2 + plotH, pad };
}

/** The last turn's latencies as one line of text (a dash for a stage that did not run). */
export function metricsLine(metrics) {
  const ms = (v) => (v === null || v === undefined ? "–" : Math.round(v));
  return t("metrics.line", { transcript: ms(metrics.speech_stopped_to_transcript_ms), token: ms(metrics.speech_stopped_to_first_token_ms), audio: ms(metrics.speech_stopped_to_first_audio_ms) });
}

const fmt = (ms) => (ms === null || ms === undefined ? "–" : `${Math.round(ms)} ms`);

const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

/** The chart as SVG markup (an accessible image: a title per bar, a summary label). */
export function chartSvg(turns, opts = {}) {
  const m = chartModel(turns, opts);
  const last = m.bars[m.bars.length - 1];
  const label = last ? t("chart.label", { count: m.bars.length, ms: fmt(last.total) }) : t("chart.empty");
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${m.width} ${m.height}" role="img" aria-label="${esc(label)}">`,
    `<line x1="${m.pad}" y1="${m.plotBottom}" x2="${m.width}" y2="${m.plotBottom}" class="axis"/>`,
    `<text x="${m.pad - 4}" y="${m.plotTop + 4}" text-anchor="end" class="tick">${m.max}</text>`,
    `<text x="${m.pad - 4}" y="${m.plotBottom}" text-anchor="end" class="tick">0</text>`,
  ];
  for (const bar of m.bars) {
    const title = STAGES.map((s) => {
      const r = bar.rects.find((x) => x.stage === s.key);
      return `${s.label} ${fmt(r ? r.ms : null)}`;
    }).join(", ");
    parts.push(`<g class="bar" data-turn="${bar.turn}"><title>${esc(t("chart.bar", { turn: bar.turn, stages: title, ms: fmt(bar.total) }))}</title>`);
    for (const r of bar.rects) {
      parts.push(`<rect x="${r.x.toFixed(1)}" y="${r.y.toFixed(1)}" width="${r.w.toFixed(1)}" height="${r.h.toFixed(1)}" fill="${r.color}" data-stage="${r.stage}"/>`);
    }
    parts.push(`<text x="${(bar.x + bar.w / 2).toFixed(1)}" y="${(bar.top - 3).toFixed(1)}" text-anchor="middle" class="total">${bar.total === null ? "" : Math.round(bar.total)}</text>`);
    parts.push(`<text x="${(bar.x + bar.w / 2).toFixed(1)}" y="${m.plotBottom + 12}" text-anchor="middle" class="tick">${bar.turn}</text>`);
    parts.push("</g>");
  }
  parts.push("</svg>");
  return parts.join("");
}
