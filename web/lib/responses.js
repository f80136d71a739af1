// The answers as the page tracks them: the voice each response used, its answer item,
// whether its audio is still wanted (a barge-in stops it), and how each answer ended.
import { errorMessage } from "./events.js";
import { t } from "./i18n.js";

/** The voice of a response: its own, else the session's (null when neither says). */
export function responseVoice(response, sessionVoice) {
  const out = response && response.audio && response.audio.output;
  return (out && out.voice) || (response && response.voice) || sessionVoice || null;
}

export class Responses {
  constructor() {
    this.byId = new Map(); // response id -> {id, voice, status, itemId, truncateAt}
    this.active = null; // the response being generated
    this.stopped = new Set(); // responses whose audio is no longer wanted
  }

  get(id) {
    return this.byId.get(id);
  }

  /** `response.created`. */
  start(id, voice) {
    this.active = id;
    this.byId.set(id, { id, voice, status: "in_progress", itemId: null });
  }

  /** The answer item of a response; returns the response's record (undefined if unknown). */
  setItem(responseId, itemId) {
    const r = this.byId.get(responseId);
    if (r) r.itemId = itemId;
    return r;
  }

  /** A barge-in: the active response's late audio is dropped from now on. */
  interrupt() {
    if (this.active) this.stopped.add(this.active);
  }

  /** Speech over the answer paused it, and was no interruption (`r1voice.interruption`:
   *  a backchannel, or no words): its audio, sent again from what was heard, is wanted. */
  resume() {
    if (this.active) this.stopped.delete(this.active);
  }

  isStopped(id) {
    return this.stopped.has(id);
  }

  /** How much of a cancelled answer was heard (ms): its item is truncated there once done. */
  cutAt(id, ms) {
    const r = this.byId.get(id);
    if (r) r.truncateAt = ms;
  }

  /** `response.done`: the record, with its final status and voice. */
  finish(response, sessionVoice) {
    const r = this.byId.get(response.id) || { id: response.id };
    Object.assign(r, { status: response.status, voice: responseVoice(response, sessionVoice) || r.voice });
    this.byId.set(response.id, r);
    if (this.active === response.id) this.active = null;
    return r;
  }

  /** The connection closed: no response is being generated any more. */
  clearActive() {
    this.active = null;
  }
}

/** The items of a finished response that are answers (messages). */
export function answerItems(response) {
  return (response.output || []).filter((item) => !item.type || item.type === "message");
}

/** How one answer item of a finished response ends in its bubble; `playedMs` is how much
 *  of its audio was played. A response `incomplete` (cut at max_output_tokens; its item is
 *  incomplete too) is a whole answer, played to its end: not an interruption. */
export function answerOutcome(response, item, voice, playedMs) {
  const part = (item.content || [])[0] || {};
  const cut = response.status === "incomplete";
  const interrupted = response.status === "cancelled" || (item.status === "incomplete" && !cut);
  const meta = [
    voice ? t("log.voice", { voice }) : null,
    interrupted ? t("log.heardSeconds", { seconds: (playedMs / 1000).toFixed(1) }) : null,
    cut ? t("log.cutAtMax") : null,
  ].filter(Boolean).join(" · ");
  return {
    interrupted,
    status: interrupted ? "cancelled" : response.status,
    heard: part.transcript ?? part.text,
    meta,
    reason: response.status_details && response.status_details.reason,
  };
}

/** What a failed response means for the page: "busy" (offer a retry), {note} (a line in
 *  the conversation), or null (the server's own `error` event already said it: tts_failed). */
export function answerFailure(response) {
  if (response.status !== "failed") return null;
  const err = (response.status_details && response.status_details.error) || {};
  if (err.code === "server_busy") return "busy";
  if (err.code === "tts_failed") return null;
  return { note: t("log.answerFailed", { message: errorMessage(err) }) };
}
