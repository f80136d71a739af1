// The session's configuration as the server confirms it: what each pipeline card shows,
// the choices the user makes on the cards and palettes (sent as `session.update`, then
// confirmed by the session or refused by an error), the mode switch, the components
// list the palettes come from, and the pipeline asked for once the components are known
// when the page opens in Chinese (see chineseDefaults).
import { authHeaders } from "../lib/auth.js";
import { Choices } from "../lib/choices.js";
import { currentKey, fieldsFor, slotsOfFields, palettes as toPalettes } from "../lib/components.js";
import { errorMessage, sessionUpdate, sessionView } from "../lib/events.js";
import { t } from "../lib/i18n.js";
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
    this.defaults = null; // (palettes, view, chosenSlots) => [[slot, key]]: asked for once
  }

  /** Ask once, when the components list and a session are both there, for the choices
   *  `defaults` picks (slots the user has chosen are passed to it, to leave alone). */
  wantDefaults(defaults) {
    this.defaults = defaults;
    this._applyDefaults();
  }

  _applyDefaults() {
    if (!this.defaults || !this.palettes || !this.raw || !this.client.isOpen) return;
    const chosen = [...slotsOfFields(this.choices.wanted()), ...Object.keys(this.choices.pending)];
    const picks = this.defaults(this.palettes, this.view, chosen);
    this.defaults = null;
    if (picks.length) this.chooseAll(picks);
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
    // keep the user's choices (GPT-Live took them in session.start, and takes no others)
    if (wanted && this.client.protocol !== "live") this.client.send(sessionUpdate(wanted));
    if (!this.palettes) this.load();
    else this._applyDefaults();
  }

  /** The session as the server confirmed it: the cards, the mode switch, pending choices
   *  settled (settle: false only shows it again, the choices still waiting). */
  show(session, { settle = true } = {}) {
    this.raw = session;
    this.view = sessionView(session);
    this.debug.session = this.view;
    const pipeline = this.pipeline;
    for (const slot of SLOTS) {
      const key = currentKey(slot, this.view, this.palettes ? this.palettes.llm : []);
      const outcome = settle ? this.choices.settle(slot, key) : null;
      if (outcome === "used") {
        announce(t("choice.used", { label: pipeline.labelOf(slot, key) }));
        pipeline.setRefusal(slot, null);
      } else if (outcome === "kept") pipeline.setRefusal(slot, t("choice.kept", { label: pipeline.labelOf(slot, key) }));
      pipeline.setCurrent(slot, key);
      const waiting = this.choices.pending[slot];
      if (waiting) pipeline.setPending(slot, waiting.key);
    }
    for (const input of document.querySelectorAll("input[name=mode]")) {
      input.checked = input.value === (this.isPtt() ? "push-to-talk" : "hands-free");
    }
    this.onChange();
  }

  /** Put component `key` in `slot` (a drop, a click, the mode switch). */
  choose(slot, key) {
    this.chooseAll([[slot, key]]);
  }

  /** Several choices ([[slot, key], ...]) in one `session.update`, each card waiting
   *  for the session it confirms. */
  chooseAll(picks) {
    const pipeline = this.pipeline;
    const proposed = [];
    for (const [slot, key] of picks) {
      const rows = (this.palettes && this.palettes[slot]) || [];
      const row = rows.find((r) => r.key === key);
      if (row && !row.available) {
        const label = pipeline.labelOf(slot, key);
        pipeline.setRefusal(slot, t("choice.unavailable", { label, reason: row.reason || t("palette.notAvailable") }));
        announce(t("choice.unavailableSaid", { label, reason: row.reason || t("palette.notAvailable") }));
        continue;
      }
      const id = row ? row.id : key === "none" ? null : key;
      const fields = fieldsFor(slot, id, this.view);
      if (fields) proposed.push({ slot, key, fields });
    }
    if (!proposed.length) return;
    if (!this.client.isOpen) {
      for (const { slot, fields } of proposed) {
        pipeline.setRefusal(slot, t("choice.offline"));
        this.choices.remember(fields);
      }
      return;
    }
    const eventId = this.client.nextId("evt_choose");
    for (const { slot, key, fields } of proposed) {
      this.choices.propose(slot, key, eventId, fields);
      pipeline.setPending(slot, key);
    }
    this.client.send(sessionUpdate(Object.assign({}, ...proposed.map((p) => p.fields)), eventId));
  }

  /** Fields to keep on every new session (the settings drawer's). */
  remember(fields) {
    this.choices.remember(fields);
  }

  /** The server refused a field (the speech language): new sessions are not asked for it again. */
  forget(field) {
    this.choices.forget(field);
  }

  /** An `error` event's error: true when it refused a pending choice, which its card then
   *  names, and the card and the mode switch show what is used again. */
  refused(err) {
    const refused = this.choices.refuse(err.event_id || null, err.param);
    if (!refused) return false;
    const label = this.pipeline.labelOf(refused.slot, refused.key);
    this.pipeline.setRefusal(refused.slot, t("choice.refused", { label, message: errorMessage(err) }));
    announce(t("choice.refused", { label, message: err.message || err.code }));
    if (this.raw) this.show(this.raw, { settle: false });
    // the update was refused whole: the choices sent with the refused one go again alone
    if (refused.others.length) this.chooseAll(refused.others.map((o) => [o.slot, o.key]));
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
      if (res.status === 503) throw Object.assign(new Error("not ready"), { loading: true });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      this.palettes = toPalettes(await res.json());
      this.pipeline.setPalettes(this.palettes);
      if (this.raw) this.show(this.raw, { settle: false });
      this._applyDefaults();
    } catch (err) {
      const why = () => (err.loading ? t("palette.stillLoading") : err.message);
      this.pipeline.setPalettesLoading(() => t("palette.retrying", { message: why() }));
      setTimeout(() => this.load(attempt + 1), Math.min(10000, 1000 * 2 ** attempt));
    }
  }
}
