// The session's configuration as the server confirms it: what each pipeline card shows,
// the choices the user makes on the cards and palettes (sent as `session.update`, then
// confirmed by the session or refused by an error), the mode switch, and the components
// list the palettes come from.
import { authHeaders } from "../lib/auth.js";
import { Choices } from "../lib/choices.js";
import { currentKey, fieldsFor, palettes as toPalettes } from "../lib/components.js";
import { errorMessage, sessionUpdate, sessionView } from "../lib/events.js";
import { announce } from "./dom.js";

const SLOTS = ["turn", "asr", "tts", "llm"];

export class SessionConfig {
  /** deps: client (RealtimeClient), pipeline (PipelineView), debug (window.r1voice.session),
   *  onChange() after each confirmed session (the settings form, the Talk button follow it). */
  constructor({ client, pipeline, debug, onChange }) {
    Object.assign(this, { client, pipeline, debug, onChange });
    this.view = {}; // sessionView of the server's confirmed session
    this.raw = null; // that session as the server sent it
    this.palettes = null; // the components list, per slot
    this.choices = new Choices();
    this.handsFreeTurn = "server_vad"; // what hands-free mode returns to
  }

  /** Push-to-talk: the session has no turn detection. */
  isPtt() {
    return this.view.turnDetection === null;
  }

  /** `session.created`: a new session, with the server's defaults. */
  created(session) {
    this.show(session);
    // hands-free mode returns to the turn detection the server starts sessions with
    if (this.view.turnDetection) this.handsFreeTurn = this.view.turnDetection.type;
    const wanted = this.choices.wanted();
    if (wanted) this.client.send(sessionUpdate(wanted)); // keep the user's choices
    if (!this.palettes) this.load();
  }

  /** The session as the server confirmed it: the cards, the mode switch, pending choices settled. */
  show(session) {
    this.raw = session;
    this.view = sessionView(session);
    this.debug.session = this.view;
    const pipeline = this.pipeline;
    for (const slot of SLOTS) {
      const key = currentKey(slot, this.view, this.palettes ? this.palettes.llm : []);
      const outcome = this.choices.settle(slot, key);
      if (outcome === "used") {
        announce(`${pipeline.labelOf(slot, key)} is now in use.`);
        pipeline.setRefusal(slot, null);
      } else if (outcome === "kept") pipeline.setRefusal(slot, `The server kept ${pipeline.labelOf(slot, key)}.`);
      pipeline.setCurrent(slot, key);
    }
    for (const input of document.querySelectorAll("input[name=mode]")) {
      input.checked = input.value === (this.isPtt() ? "push-to-talk" : "hands-free");
    }
    this.onChange();
  }

  /** Put component `key` in `slot` (a drop, a click, the mode switch). */
  choose(slot, key) {
    const pipeline = this.pipeline;
    const rows = (this.palettes && this.palettes[slot]) || [];
    const row = rows.find((r) => r.key === key);
    if (row && !row.available) {
      pipeline.setRefusal(slot, `${row.label}: ${row.reason || "not available"}`);
      announce(`${row.label} is not available: ${row.reason}`);
      return;
    }
    const id = row ? row.id : key === "none" ? null : key;
    const fields = fieldsFor(slot, id, this.view);
    if (!fields) return;
    if (!this.client.isOpen) {
      pipeline.setRefusal(slot, "Not connected: the choice will be tried when the page reconnects.");
      this.choices.remember(fields);
      return;
    }
    const eventId = this.client.nextId("evt_choose");
    this.choices.propose(slot, key, eventId, fields);
    pipeline.setPending(slot, key);
    this.client.send(sessionUpdate(fields, eventId));
  }

  /** Fields to keep on every new session (the settings drawer's). */
  remember(fields) {
    this.choices.remember(fields);
  }

  /** An `error` event's error: true when it refused a pending choice, which its card then
   *  names, and the card and the mode switch show what is used again. */
  refused(err) {
    const refused = this.choices.refuse(err.event_id || null, err.param);
    if (!refused) return false;
    const label = this.pipeline.labelOf(refused.slot, refused.key);
    this.pipeline.setRefusal(refused.slot, `${label} was refused: ${errorMessage(err)}`);
    announce(`${label} was refused: ${err.message || err.code}`);
    if (this.raw) this.show(this.raw);
    return true;
  }

  /** A new API key: the components are loaded again once connected. */
  forgetPalettes() {
    this.palettes = null;
  }

  async load(attempt = 0) {
    try {
      const res = await fetch("/v1/r1voice/components", { headers: authHeaders(sessionStorage) });
      if (res.status === 401) return; // the key prompt is up; a connect loads them again
      if (res.status === 503) throw new Error("the server is still loading its models");
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      this.palettes = toPalettes(await res.json());
      this.pipeline.setPalettes(this.palettes);
      if (this.raw) this.show(this.raw);
    } catch (err) {
      this.pipeline.setPalettesLoading(`Components not available yet (${err.message}); retrying…`);
      setTimeout(() => this.load(attempt + 1), Math.min(10000, 1000 * 2 ** attempt));
    }
  }
}
