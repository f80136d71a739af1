// The pipeline choices the user makes (a drop, a palette click, the mode switch) as the
// server answers them: one `session.update` pending per slot until the session confirms
// or an error refuses it, and every accepted choice remembered, to be sent again on the
// next session (a reconnect starts from the server's defaults).
import { slotOfParam } from "./events.js";

export class Choices {
  constructor() {
    this.pending = {}; // slot -> {key, eventId, fields}
    this.desired = {}; // sessionPatch fields
  }

  /** Fields to send again on every new session (later ones win). */
  remember(fields) {
    Object.assign(this.desired, fields);
  }

  /** Stop sending `field` on new sessions (the server refused it). */
  forget(field) {
    delete this.desired[field];
  }

  /** Whether a choice for `slot` is waiting for the server. */
  isPending(slot) {
    return Boolean(this.pending[slot]);
  }

  /** What to send on a new session, or null when the user chose nothing. */
  wanted() {
    return Object.keys(this.desired).length ? { ...this.desired } : null;
  }

  /** A choice sent as `session.update` `eventId`; the server has not answered yet. */
  propose(slot, key, eventId, fields) {
    this.pending[slot] = { key, eventId, fields };
  }

  /** The session now uses `key` in `slot`: "used" when that was the pending choice (it is
   *  remembered), "kept" when the server kept another, null when nothing was pending. */
  settle(slot, key) {
    const wanted = this.pending[slot];
    if (!wanted) return null;
    delete this.pending[slot];
    if (wanted.key !== key) return "kept";
    this.remember(wanted.fields);
    return "used";
  }

  /** An error refused a pending choice, by the event it answers (of several choices sent
   *  in one event, the one whose field it names) or else by the field it names: {slot,
   *  key, others} of that choice (no longer pending), or null when none was. The server
   *  refuses an update whole, so the other choices sent in the same event were not
   *  applied either: `others` lists them ([{slot, key, fields}], no longer pending), to be
   *  sent again without the refused one. */
  refuse(eventId, param) {
    const bySlot = slotOfParam(param);
    const answered = Object.keys(this.pending).filter((s) => eventId && this.pending[s].eventId === eventId);
    let slot = answered.length > 1 && answered.includes(bySlot) ? bySlot : (answered.at(-1) ?? null);
    if (!slot && bySlot && this.pending[bySlot]) slot = bySlot;
    if (!slot) return null;
    const { key } = this.pending[slot];
    delete this.pending[slot];
    const others = answered.filter((s) => s !== slot).map((s) => ({ slot: s, key: this.pending[s].key, fields: this.pending[s].fields }));
    for (const other of others) delete this.pending[other.slot];
    return { slot, key, others };
  }
}
