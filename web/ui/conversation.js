// The conversation column: user turns (partial, then final transcripts; typed text),
// answers as they stream, an R1 model's reasoning folded in a "thinking" panel, and
// interrupted answers marked with what was heard.
import { t } from "../lib/i18n.js";
import { h } from "./dom.js";

export class Conversation {
  constructor(root) {
    this.root = root;
    this.items = new Map(); // item_id -> {el, text, role}
  }

  _add(el) {
    const stick = this.root.scrollHeight - this.root.scrollTop - this.root.clientHeight < 40;
    this.root.append(el);
    if (stick) this.root.scrollTop = this.root.scrollHeight;
    return el;
  }

  _user(id) {
    let item = this.items.get(id);
    if (!item) {
      const el = this._add(h("div", { class: "msg user partial", "data-role": "user", "data-item": id }, "…"));
      item = { el, role: "user", text: "" };
      this.items.set(id, item);
    }
    return item;
  }

  userPartial(id) {
    return this._user(id).el;
  }

  userDelta(id, delta) {
    const item = this._user(id);
    if (!item.el.classList.contains("partial")) return;
    item.text += delta;
    item.el.textContent = item.text || "…";
  }

  userFinal(id, transcript) {
    const item = this._user(id);
    item.text = transcript;
    item.el.classList.remove("partial");
    item.el.classList.toggle("empty", !transcript);
    item.el.textContent = transcript || item.silentFor || t("log.nothingHeard");
  }

  userFailed(id, message) {
    const item = this._user(id);
    item.el.classList.remove("partial");
    item.el.classList.add("failed");
    item.el.textContent = t("log.notTranscribed", { message });
  }

  /** Speech over an answer was no interruption (`r1voice.interruption`): the user turn
   *  `id` was a backchannel, or held no words; either way the answer went on. A null
   *  `verdict` takes the mark back (the speech went on, and may interrupt yet). */
  userDidNotInterrupt(id, verdict) {
    const item = this._user(id);
    item.el.classList.remove("backchannel", "no-words");
    delete item.el.dataset.badge;
    item.verdict = verdict;
    if (!verdict) return;
    const kind = verdict === "backchannel" ? "backchannel" : "no-words";
    item.el.classList.add(kind);
    item.el.dataset.badge = t(kind === "backchannel" ? "log.backchannel" : "log.noWords");
  }

  /** The user stayed silent after an answer (`input_audio_buffer.timeout_triggered`):
   *  the turn the server committed for that silence, shown as the silence it was. */
  userSilent(id, ms) {
    const item = this._user(id);
    item.el.classList.add("silence");
    item.silentFor = t("log.silence", { seconds: (ms / 1000).toFixed(1) });
    this.userFinal(id, "");
  }

  userText(id, text) {
    const item = this._user(id);
    this.userFinal(id, text);
    item.el.classList.add("typed");
  }

  /** A user message the server added (items.userMessage): typed text is shown as sent;
   *  a spoken one only if its bubble is not on screen yet (a live turn already has one). */
  userItem(message) {
    if (!message) return;
    if (message.typed) this.userText(message.id, message.text);
    else if (!this.has(message.id)) {
      this.userPartial(message.id);
      if (message.transcript) this.userFinal(message.id, message.transcript);
    }
  }

  _assistant(id) {
    let item = this.items.get(id);
    if (!item) {
      const thinking = h("details", { class: "thinking", hidden: true }, h("summary", {}, t("log.thinking")), h("div", { class: "reasoning-text" }));
      const text = h("span", { class: "text" });
      const unheard = h("span", { class: "unheard" });
      const meta = h("div", { class: "meta" });
      const el = this._add(h("div", { class: "msg assistant", "data-role": "assistant", "data-item": id }, thinking, text, unheard, meta));
      item = { el, role: "assistant", text: "", reasoning: "", parts: { thinking, text, unheard, meta } };
      this.items.set(id, item);
    }
    return item;
  }

  assistantStart(id, meta) {
    const item = this._assistant(id);
    if (meta) item.parts.meta.textContent = meta;
    item.el.classList.add("streaming");
  }

  assistantDelta(id, delta) {
    const item = this._assistant(id);
    item.text += delta;
    item.parts.text.textContent = item.text;
  }

  reasoningDelta(id, delta) {
    const item = this._assistant(id);
    item.reasoning += delta;
    item.parts.thinking.hidden = false;
    item.parts.thinking.querySelector(".reasoning-text").textContent = item.reasoning;
  }

  /** Thinking ended (`r1voice.reasoning.done`): the summary says whether it was cut. */
  reasoningDone(id, summary, cut) {
    const item = this._assistant(id);
    item.parts.thinking.querySelector("summary").textContent = summary;
    item.parts.thinking.classList.toggle("cut", cut);
  }

  /** The answer ended: status completed / incomplete (cut at the token limit, but whole
   *  as far as it went) / cancelled / failed; `heard` is what the server kept of an
   *  interrupted answer; `meta` a line under it. */
  assistantDone(id, { status, heard, meta, reason } = {}) {
    const item = this.items.get(id);
    if (!item) return;
    item.el.classList.remove("streaming");
    if (meta) item.parts.meta.textContent = meta;
    if (status === "cancelled") {
      item.el.classList.add("interrupted");
      this.setHeard(id, typeof heard === "string" ? heard : item.text);
      const badge = h("span", { class: "badge" }, t(reason === "client_cancelled" ? "log.stopped" : "log.interrupted"));
      item.parts.meta.prepend(badge, " ");
    } else if (status === "failed") {
      item.el.classList.add("failed");
    }
  }

  /** The answer paused by speech over it went on (no interruption after all). */
  assistantResumed(id) {
    const item = this.items.get(id);
    if (!item || item.role !== "assistant") return;
    item.el.classList.add("resumed");
    if (!item.parts.meta.querySelector(".resumed-badge")) item.parts.meta.prepend(h("span", { class: "badge resumed-badge" }, t("log.resumed")), " ");
  }

  /** What of an interrupted answer was heard: shown plain, the rest struck through. */
  setHeard(id, heard) {
    const item = this.items.get(id);
    if (!item || item.role !== "assistant" || !item.el.classList.contains("interrupted")) return;
    const kept = heard.trim();
    const rest = item.text.startsWith(kept) ? item.text.slice(kept.length) : "";
    item.parts.text.textContent = kept || "…";
    item.parts.unheard.textContent = rest;
    item.parts.unheard.title = t("log.unheard");
    item.el.setAttribute("aria-label", t("log.interruptedLabel", { text: kept || t("log.nothing") }));
    item.heard = kept;
  }

  remove(id) {
    const item = this.items.get(id);
    if (item) {
      item.el.remove();
      this.items.delete(id);
    }
  }

  note(text, kind = "info", action) {
    const el = h("div", { class: `note ${kind}`, role: kind === "error" ? "alert" : undefined }, text);
    if (action) el.append(" ", h("button", { type: "button", onclick: action.run }, action.label));
    return this._add(el);
  }

  divider(text) {
    return this._add(h("div", { class: "divider", role: "separator" }, text));
  }

  has(id) {
    return this.items.has(id);
  }
}
