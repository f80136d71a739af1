// GPT-Live (/v1/live/sessions) for a page written for Realtime: the page's client events
// become Live's (or are refused by name, when Live has no such thing), and Live's server
// events become the Realtime ones the page already shows. Live has no items, responses
// or commits: a user turn is the transcript between answers, an answer the transcript
// and audio between user turns, ended when the next turn or answer starts (or after a
// quiet spell, see LiveSocket). Delegations (created, thinking, commentary, done) are
// kept with their times on the session's clock for the timeline.

export const LIVE_MODEL = "gpt-live-1"; // the server maps it to its own pipeline
const FORMAT = { type: "audio/pcm", rate: 24000 }; // the page's PROTOCOL_RATE

/** The delegation of `session.start` for the page's choice: "off" (none: the live model
 *  answers everything), "client" (a sideband answers), else the LLM that works it out. */
export function delegationConfig(choice) {
  if (!choice || choice === "off") return null;
  if (choice === "client") return { type: "client" };
  return { type: "responses", responses: { model: choice } };
}

/** `session.start` for the page's voice, instructions and delegation choice (`webrtc`:
 *  a WebRTC session's config, without the format the call negotiates). */
export function startEvent({ voice, instructions, delegation, webrtc = false } = {}) {
  const session = { model: LIVE_MODEL, audio: webrtc ? {} : { format: { ...FORMAT } } };
  if (voice) session.audio.output = { voice };
  if (!Object.keys(session.audio).length) delete session.audio;
  if (instructions) session.instructions = instructions;
  const d = delegationConfig(delegation);
  if (d) session.delegation = d;
  return { type: "session.start", session };
}

/** The Live session resource in the Realtime shape the page reads (sessionView); Live
 *  takes turns itself, which the page shows as hands-free. */
export function realtimeSession(resource) {
  const r = resource || {};
  const voice = r.audio && r.audio.output ? r.audio.output.voice : undefined;
  return {
    id: r.id,
    object: "realtime.session",
    type: "realtime",
    model: r.model,
    instructions: r.instructions,
    audio: { input: { turn_detection: { type: "server_vad" } }, output: { voice: voice && voice.id ? voice.id : voice } },
    live: { delegation: r.delegation ?? null },
  };
}

// Realtime client events Live has no need of: it has no items to truncate or read back,
// and the server stops its own answer when the user speaks.
const NOT_NEEDED = ["conversation.item.truncate", "conversation.item.retrieve", "response.cancel", "output_audio_buffer.clear"];
const SAME_FIELDS = ["instructions", "voice"]; // what session.start fixed

export class LiveTranslator {
  /** clock(): ms (the session's clock for backend events, which carry no time). */
  constructor(clock = () => Date.now()) {
    this.clock = clock;
    this.t0 = clock();
    this.count = 0;
    this.session = null; // the Realtime shape of the session resource
    this.user = null; // {id, text}: the user turn being transcribed
    this.answer = null; // {responseId, itemId, text}
    this.delegations = []; // {id, target, created, thinking: [ms], commentary, done}
  }

  _id(prefix) {
    return `${prefix}_${++this.count}`;
  }

  /** A Realtime client event -> {send: [Live events]} or {refused: an error event}. */
  toLive(ev) {
    const id = ev.event_id ? { event_id: ev.event_id } : {};
    if (ev.type === "input_audio_buffer.append") return { send: [{ type: "session.input_audio.append", audio: ev.audio, ...id }] };
    if (ev.type.startsWith("session.input_audio.") || ev.type.endsWith(".append") || ev.type === "session.close") return { send: [ev] };
    if (NOT_NEEDED.includes(ev.type)) return { send: [] };
    if (ev.type === "session.update") return this._update(ev);
    return { refused: refusal(ev, "type", `${ev.type} has no GPT-Live form (Live takes turns itself and has no items)`) };
  }

  /** Live fixes the voice and instructions at session.start: an update that keeps them is
   *  confirmed here, one that changes anything is refused naming the field. */
  _update(ev) {
    const s = ev.session || {};
    const now = this.session || {};
    const given = { instructions: s.instructions, voice: s.audio && s.audio.output ? s.audio.output.voice : undefined };
    const current = { instructions: now.instructions, voice: now.audio && now.audio.output.voice };
    const changed = SAME_FIELDS.find((f) => given[f] !== undefined && given[f] !== current[f]);
    const other = Object.keys(s).find((k) => !["type", "instructions", "audio"].includes(k)) || (s.audio && (s.audio.input || Object.keys(s.audio.output || {}).some((k) => k !== "voice")) ? "audio" : null);
    const param = changed ? (changed === "voice" ? "session.audio.output.voice" : "session.instructions") : other ? `session.${other}` : null;
    if (param) return { refused: refusal(ev, param, `${param} is fixed by GPT-Live's session.start: choose it before connecting, or talk over Realtime`) };
    return { reply: { type: "session.updated", event_id: ev.event_id, session: this.session } };
  }

  /** A Live server event -> the Realtime events the page handles, in order. `playing`:
   *  whether the page still plays the answer (a user turn then interrupts it). */
  fromLive(ev, { playing = false } = {}) {
    switch (ev.type) {
      case "session.started":
        this.t0 = this.clock();
        this.session = realtimeSession(ev.session);
        return [{ type: "session.created", session: this.session }];
      case "session.updated":
        this.session = realtimeSession(ev.session);
        return [{ type: "session.updated", session: this.session }];
      case "session.input_transcript.delta":
        return this._heard(ev, playing);
      case "session.output_transcript.delta": {
        const out = this._answering();
        this.answer.text += ev.delta;
        return [...out, { type: "response.output_audio_transcript.delta", response_id: this.answer.responseId, item_id: this.answer.itemId, delta: ev.delta }];
      }
      case "session.output_audio.delta": {
        const out = this._answering();
        return [...out, { type: "response.output_audio.delta", response_id: this.answer.responseId, item_id: this.answer.itemId, delta: ev.delta }];
      }
      case "session.usage.updated": // a new answer is being prepared: the turn before it ended
      case "session.closed":
        return [...this.finish(), ev];
      case "error": {
        const error = { ...ev.error, event_id: ev.client_event_id ?? (ev.error || {}).client_event_id };
        return [{ ...ev, error }];
      }
      default:
        return [...this._delegation(ev), ev];
    }
  }

  _heard(ev, playing) {
    const out = [];
    if (!this.user) {
      // a new user turn: it interrupts an answer still playing (speech_started flushes it)
      const id = this._id("live_user");
      out.push({ type: "input_audio_buffer.speech_started", item_id: id, audio_start_ms: ev.start_ms });
      out.push({ type: "input_audio_buffer.speech_stopped", item_id: id, audio_end_ms: ev.end_ms }); // words come once it ended
      out.push(...this._endAnswer(playing ? "cancelled" : "completed"));
      this.user = { id, text: "" };
    }
    this.user.text += ev.delta;
    return [...out, { type: "conversation.item.input_audio_transcription.delta", item_id: this.user.id, delta: ev.delta }];
  }

  _answering() {
    if (this.answer) return [];
    const out = this._endUser();
    this.answer = { responseId: this._id("live_resp"), itemId: this._id("live_item"), text: "" };
    const response = { id: this.answer.responseId, object: "realtime.response", status: "in_progress", output: [] };
    const item = { id: this.answer.itemId, type: "message", role: "assistant" };
    return [...out, { type: "response.created", response }, { type: "response.output_item.added", response_id: response.id, item }];
  }

  /** The events that end the user turn and the answer under way (none when neither is). */
  finish(status = "completed") {
    return [...this._endUser(), ...this._endAnswer(status)];
  }

  _endUser() {
    if (!this.user) return [];
    const { id, text } = this.user;
    this.user = null;
    return [{ type: "conversation.item.input_audio_transcription.completed", item_id: id, transcript: text.trim() }];
  }

  _endAnswer(status) {
    if (!this.answer) return [];
    const { responseId, itemId, text } = this.answer;
    this.answer = null;
    const item = { id: itemId, type: "message", role: "assistant", status: status === "completed" ? "completed" : "incomplete", content: [{ type: "output_audio", transcript: text }] };
    const response = { id: responseId, object: "realtime.response", status, output: [item] };
    if (status === "cancelled") response.status_details = { type: "cancelled", reason: "turn_detected" };
    return [{ type: "response.output_audio.done", response_id: responseId, item_id: itemId }, { type: "response.done", response }];
  }

  /** A delegation's progress, as `live.delegation` events ({change, delegation}): Live's
   *  appends name no delegation, so thinking and commentary go to the oldest one without
   *  commentary yet. A client's commentary finishes its delegation (as the server's own
   *  bookkeeping does); a server delegation is done when its backend's response is, and
   *  its commentary (the conclusion) is appended where it is said. */
  _delegation(ev) {
    const say = (change, d) => [{ type: "live.delegation", change, delegation: { ...d, thinking: [...d.thinking] } }];
    if (ev.type === "session.delegation.created") {
      const d = { id: ev.delegation.id, target: ev.delegation.target, created: ev.offset_ms, thinking: [], commentary: null, done: null };
      this.delegations.push(d);
      return say("created", d);
    }
    if (ev.type === "response.event") return this._backend(ev);
    const open = this.delegations.find((d) => d.commentary === null);
    if (!open) return [];
    if (ev.type === "session.thinking.appended") {
      open.thinking.push(ev.start_ms);
      return say("thinking", open);
    }
    if (ev.type !== "session.commentary.appended") return [];
    open.commentary = ev.start_ms;
    if (open.done !== null) return say("commentary", open);
    open.done = ev.end_ms;
    return [...say("commentary", open), ...say("done", open)];
  }

  /** Server delegation's backend (`response.event`, Responses events of a delegation):
   *  its reasoning is its thinking, its end (completed or failed) the delegation's. */
  _backend(ev) {
    const d = this.delegations.find((x) => x.id === ev.delegation_id && x.done === null);
    const kind = String((ev.event || {}).type || "");
    const say = (change) => [{ type: "live.delegation", change, delegation: { ...d, thinking: [...d.thinking] } }];
    if (!d) return [];
    const at = Math.max(d.created, Math.round(this.clock() - this.t0));
    if (kind.includes("reasoning") && !d.thinking.length) {
      d.thinking.push(at);
      return say("thinking");
    }
    if (!/^response\.(completed|failed|incomplete|done)$/.test(kind)) return [];
    d.done = at;
    return say("done");
  }
}

/** A page-made `error` event refusing client event `ev` (as the server's would). */
function refusal(ev, param, message) {
  return { type: "error", error: { type: "invalid_request_error", code: "live_unsupported", message, param, event_id: ev.event_id } };
}

/** Speech over the answer, from the microphone's frames: true once they were loud for
 *  `holdMs` in a row while the answer plays (Live's server stops its answer itself, but
 *  the page still holds what was sent ahead: this stops it at once). */
export class SpeechGate {
  constructor({ threshold = 0.03, holdMs = 300, rate = 24000 } = {}) {
    Object.assign(this, { threshold, holdSamples: (holdMs * rate) / 1000, loud: 0 });
  }

  push(samples, playing) {
    let sum = 0;
    for (const s of samples) sum += s * s;
    const rms = samples.length ? Math.sqrt(sum / samples.length) : 0;
    this.loud = playing && rms >= this.threshold ? this.loud + samples.length : 0;
    if (this.loud < this.holdSamples) return false;
    this.loud = 0;
    return true;
  }
}
