// The Realtime protocol as the page sees it: GA event names (beta names are mapped to
// them, so a server answering in either dialect works), the session object read in
// either shape, `session.update` built in the GA shape, log-friendly copies of events
// with audio payloads elided, and user-facing messages for errors and socket closes.

import { t } from "./i18n.js";
import { base64Size } from "./pcm.js";

const BETA_TO_GA = {
  "response.audio.delta": "response.output_audio.delta",
  "response.audio.done": "response.output_audio.done",
  "response.audio_transcript.delta": "response.output_audio_transcript.delta",
  "response.audio_transcript.done": "response.output_audio_transcript.done",
  "response.text.delta": "response.output_text.delta",
  "response.text.done": "response.output_text.done",
  "conversation.item.created": "conversation.item.added",
};

/** Parse one WebSocket message: the event with its GA type, or null when not JSON. */
export function parseEvent(data) {
  let ev;
  try {
    ev = typeof data === "string" ? JSON.parse(data) : data;
  } catch {
    return null;
  }
  if (!ev || typeof ev !== "object" || typeof ev.type !== "string") return null;
  const type = BETA_TO_GA[ev.type];
  return type ? { ...ev, type, wireType: ev.type } : ev;
}

/** The fields of a session object the page shows, from the GA or the beta shape. */
export function sessionView(session) {
  const s = session || {};
  const input = (s.audio && s.audio.input) || {};
  const output = (s.audio && s.audio.output) || {};
  const pick = (...values) => values.find((v) => v !== undefined);
  const transcription = pick(input.transcription, s.input_audio_transcription);
  return {
    id: s.id,
    voice: pick(output.voice, s.voice),
    speed: pick(output.speed, s.speed),
    turnDetection: pick(input.turn_detection, s.turn_detection),
    transcriptionModel: transcription ? transcription.model : null,
    transcriptionLanguage: transcription ? (transcription.language ?? null) : null, // null: detected per turn
    instructions: s.instructions,
    temperature: s.temperature,
    modalities: pick(s.output_modalities, s.modalities),
    maxOutputTokens: pick(s.max_output_tokens, s.max_response_output_tokens),
    llm: s.r1voice ? s.r1voice.model : undefined, // the LLM answering (`model` stays "r1voice")
  };
}

/** The GA `session` object of a `session.update` changing only the given fields.
 *  fields: {voice, speed, turnDetection (object or null), transcriptionModel,
 *  transcriptionLanguage (an ISO 639-1 code, or null: detect it per turn), llm,
 *  instructions, temperature}. */
export function sessionPatch(fields) {
  const session = { type: "realtime" };
  const input = {};
  const output = {};
  if (fields.voice !== undefined) output.voice = fields.voice;
  if (fields.speed !== undefined) output.speed = fields.speed;
  if (fields.turnDetection !== undefined) input.turn_detection = fields.turnDetection;
  if (fields.transcriptionModel !== undefined) input.transcription = { model: fields.transcriptionModel };
  if (fields.transcriptionLanguage !== undefined) input.transcription = { ...input.transcription, language: fields.transcriptionLanguage };
  if (fields.llm !== undefined) session.model = fields.llm;
  if (fields.instructions !== undefined) session.instructions = fields.instructions;
  if (fields.temperature !== undefined) session.temperature = fields.temperature;
  if (Object.keys(input).length || Object.keys(output).length) {
    session.audio = {};
    if (Object.keys(input).length) session.audio.input = input;
    if (Object.keys(output).length) session.audio.output = output;
  }
  return session;
}

export function sessionUpdate(fields, eventId) {
  const ev = { type: "session.update", session: sessionPatch(fields) };
  if (eventId) ev.event_id = eventId;
  return ev;
}

const AUDIO_FIELDS = {
  "input_audio_buffer.append": "audio",
  "response.output_audio.delta": "delta",
  "response.audio.delta": "delta",
  "session.input_audio.append": "audio", // GPT-Live's
  "session.output_audio.delta": "delta",
};

/** A copy of an event fit for the log: audio payloads replaced by their size. */
export function elide(ev) {
  const field = AUDIO_FIELDS[ev.type] || AUDIO_FIELDS[ev.wireType];
  const copy = { ...ev };
  delete copy.wireType;
  if (field && typeof ev[field] === "string") copy[field] = `<${base64Size(ev[field])} bytes of audio>`;
  return copy;
}

/** Whether an event carries audio (the log folds runs of them into one line). */
export function isAudioEvent(ev) {
  return Boolean(AUDIO_FIELDS[ev.type] || AUDIO_FIELDS[ev.wireType]);
}

/** Which pipeline slot a refused `session.update` field belongs to, from `error.param`. */
export function slotOfParam(param) {
  if (!param) return null;
  if (/transcription\.language/.test(param)) return null; // the settings' speech language, not a component
  if (/voice|speed/.test(param)) return "tts";
  if (/turn_detection/.test(param)) return "turn";
  if (/transcription/.test(param)) return "asr";
  if (/model/.test(param)) return "llm";
  return null;
}

// The error codes the page explains in its own words (`error.<code>` in i18n.js).
const ERROR_HINTS = ["live_unsupported", "server_busy", "unsupported_voice", "unsupported_model", "unsupported_language", "input_audio_buffer_commit_empty", "conversation_already_has_active_response", "tts_failed"];

/** A server message made short enough for a card: long lists elided, then cut. */
export function shorten(message, max = 200) {
  const s = String(message).replace(/\[[^\]]{60,}\]/g, "[…]");
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** A message for a person, from an `error` event's `error` object: the page's words for
 *  a code it knows, with the server's own message (untranslated) in brackets. */
export function errorMessage(error) {
  const e = error || {};
  if (ERROR_HINTS.includes(e.code)) {
    const hint = t(`error.${e.code}`);
    return e.message && e.code !== "server_busy" ? `${hint} (${shorten(e.message)})` : hint;
  }
  return shorten(e.message || e.code || t("error.unknown"));
}

/** What a WebSocket close means for a person, and whether to reconnect. */
export function closeInfo(code, reason) {
  if (code === 1013) return { kind: "not_ready", message: t("close.notReady"), retry: true };
  if (code === 1008) return { kind: "refused", message: reason ? t("close.refusedWhy", { reason }) : t("close.refused"), retry: false };
  if (code === 4000) return { kind: "unreachable", message: t("close.unreachable"), retry: true };
  if (code === 1000) return { kind: "closed", message: t("close.closed"), retry: true };
  return { kind: "lost", message: reason ? t("close.lostWhy", { reason }) : code ? t("close.lostCode", { code }) : t("close.lost"), retry: true };
}

/** What the page shows while it waits `delayMs` to reconnect after a close (closeInfo's
 *  `info`): the status line, and the notice of this kind that replaces the other kind. */
export function retryView(info, delayMs, everConnected) {
  const seconds = Math.max(1, Math.round(delayMs / 1000));
  const starting = info.kind === "not_ready";
  return {
    state: starting ? "not-ready" : "reconnecting",
    status: t(starting ? "status.starting" : "status.retrying", { seconds }),
    notice: starting ? "not-ready" : "connection",
    replaces: starting ? "connection" : "not-ready",
    message: t(everConnected ? "notice.retryInKept" : "notice.retryIn", { message: info.message, seconds }),
  };
}

/** What an audio-device error means for a person. */
export function micErrorMessage(err) {
  const name = err && err.name;
  if (name === "NotAllowedError" || name === "SecurityError" || name === "PermissionDeniedError") {
    return { kind: "denied", message: t("mic.denied") };
  }
  if (name === "NotFoundError" || name === "OverconstrainedError" || name === "DevicesNotFoundError") {
    return { kind: "missing", message: t("mic.missing") };
  }
  if (name === "NotReadableError" || name === "AbortError") {
    return { kind: "busy", message: t("mic.busy") };
  }
  if (name === "NoMediaDevices") {
    return { kind: "insecure", message: t("mic.insecure") };
  }
  return { kind: "other", message: t("mic.other", { message: (err && err.message) || err }) };
}

const AUDIO_TYPES = /^audio\/|^video\/(webm|ogg|mp4)$/;
const AUDIO_EXTENSIONS = /\.(wav|wave|mp3|ogg|oga|opus|webm|flac|m4a|aac)$/i;

/** Whether a dropped file looks like audio (by MIME type or name). */
export function looksLikeAudio(file) {
  return AUDIO_TYPES.test(file.type || "") || AUDIO_EXTENSIONS.test(file.name || "");
}

/** The thinking panel's summary once `r1voice.reasoning.done` says how thinking ended:
 *  cut by the session's budget (the model was stopped), or finished by the model. */
export function thinkingSummary(done) {
  return t(done && done.cut === true ? "log.thinkingCut" : "log.thinking");
}

/** A conversation line for a GPT-Live delegation's change (`live.delegation`: created,
 *  thinking, commentary, done), with where it happened on the session's clock. */
export function delegationNote({ change, delegation: d }) {
  const at = { created: d.created, thinking: d.thinking.at(-1), commentary: d.commentary, done: d.done }[change];
  return t(`live.${change}`, { target: d.target, seconds: ((at || 0) / 1000).toFixed(1), ms: Math.max(0, (d.done ?? 0) - d.created) });
}
