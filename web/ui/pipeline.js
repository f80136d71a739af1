// The pipeline on screen: stage cards Input (turn detection + ASR) -> LLM -> TTS with
// their component, live state and last-turn latency; a palette per stage built from
// GET /v1/r1voice/components whose entries can be dragged onto a card (HTML5 drag and
// drop) or chosen by click / keyboard; the language the last spoken turn was heard in;
// and the per-turn latency chart. Everything it writes is kept, to be written again in
// another language (relabel).
import { accepts, CARD_OF, componentLabel, DRAG_TYPE, slotDragType, slotFromDragTypes, slotTitle } from "../lib/components.js";
import { chartSvg, STAGES } from "../lib/chart.js";
import { languageName, t } from "../lib/i18n.js";
import { IDLE, stateLabel } from "../lib/stages.js";
import { $, h } from "./dom.js";

const fmtMs = (ms, plus = "") => (ms === null || ms === undefined ? "–" : `${plus}${Math.round(ms)} ms`);

export class PipelineView {
  /** hooks: onChoose(slot, key) */
  constructor(hooks) {
    this.hooks = hooks;
    this.palettes = {};
    this.cards = {};
    this.loading = null; // () => the palettes' loading message, while they load
    this.current = {}; // slot -> the key the server confirmed
    this.pending = {}; // slot -> the key asked for, not confirmed yet
    this.stages = { ...IDLE };
    this.latency = null; // the last turn's turnSegments
    this.turns = [];
    this.heard = undefined; // the language the last spoken turn was heard in
    for (const card of document.querySelectorAll(".card[data-card]")) {
      this.cards[card.dataset.card] = card;
      this._dropTarget(card);
      card.querySelector(".change").addEventListener("click", () => this.openPalette(card.dataset.card));
    }
  }

  _dropTarget(card) {
    const name = card.dataset.card;
    const slotOf = (e) => slotFromDragTypes(e.dataTransfer && e.dataTransfer.types);
    card.addEventListener("dragenter", (e) => {
      const slot = slotOf(e);
      if (!slot) return;
      card.classList.toggle("drop-ok", accepts(name, slot));
      card.classList.toggle("drop-no", !accepts(name, slot));
      e.preventDefault();
    });
    // every card takes the drop: a wrong one then says where the component goes
    card.addEventListener("dragover", (e) => {
      if (!slotOf(e)) return;
      e.preventDefault();
      e.dataTransfer.dropEffect = "copy";
    });
    card.addEventListener("dragleave", (e) => {
      if (!card.contains(e.relatedTarget)) card.classList.remove("drop-ok", "drop-no");
    });
    card.addEventListener("drop", (e) => {
      const raw = e.dataTransfer.getData(DRAG_TYPE);
      card.classList.remove("drop-ok", "drop-no");
      if (!raw) return; // a file: the page's own drop handler takes it
      e.preventDefault();
      e.stopPropagation();
      let payload;
      try {
        payload = JSON.parse(raw);
      } catch {
        return;
      }
      if (!accepts(name, payload.slot)) {
        this.setRefusal(payload.slot, t("card.wrongCard", { component: slotTitle(payload.slot), card: CARD_OF[payload.slot].toUpperCase() }), name);
        return;
      }
      this.hooks.onChoose(payload.slot, payload.key, "drop");
    });
  }

  /** Focus the first choice of a card's palette (the keyboard path to "drag"). */
  openPalette(card) {
    const palette = $(`palette-${card}`);
    for (const d of palette.querySelectorAll("details")) if (d.querySelector("[aria-pressed=true]")) d.open = true;
    const target = palette.querySelector(".component[aria-pressed=true]") || palette.querySelector(".component:not([aria-disabled=true])");
    palette.scrollIntoView({ block: "nearest" });
    if (target) target.focus();
  }

  /** message: () => the text (it is written again when the language changes). */
  setPalettesLoading(message) {
    this.loading = message;
    for (const card of Object.keys(this.cards)) {
      const list = $(`palette-${card}`).querySelector(".lists");
      list.replaceChildren(h("p", { class: "loading" }, message()));
    }
  }

  setPalettes(palettes) {
    this.palettes = palettes;
    this.loading = null;
    const byCard = { input: [], llm: [], tts: [] };
    for (const [slot, rows] of Object.entries(palettes)) byCard[CARD_OF[slot]].push([slot, rows]);
    for (const [card, groups] of Object.entries(byCard)) {
      const lists = $(`palette-${card}`).querySelector(".lists");
      lists.replaceChildren(...groups.map(([slot, rows]) => this._group(slot, rows)));
    }
  }

  _group(slot, rows) {
    const title = slotTitle(slot);
    const headingId = `palette-${slot}-title`;
    if (slot !== "tts") {
      return h("div", { class: "group" }, h("h4", { id: headingId }, title), this._list(slot, rows, headingId));
    }
    // voices: the main ones first, then espeak-ng's languages and OpenAI's alias names folded
    const langs = rows.filter((r) => r.engine === "espeak-ng" && r.id !== "espeak-ng");
    const aliases = rows.filter((r) => r.engine === "alias");
    const main = rows.filter((r) => !langs.includes(r) && !aliases.includes(r));
    const filter = h("input", { type: "search", class: "filter", placeholder: t("palette.filter"), "aria-label": t("palette.filterLabel") });
    const langList = this._list(slot, langs, headingId);
    filter.addEventListener("input", () => {
      const q = filter.value.trim().toLowerCase();
      for (const li of langList.children) li.hidden = Boolean(q) && !li.textContent.toLowerCase().includes(q);
    });
    return h(
      "div",
      { class: "group" },
      h("h4", { id: headingId }, title),
      this._list(slot, main, headingId),
      langs.length ? h("details", { class: "more" }, h("summary", {}, t("palette.espeakLanguages", { count: langs.length })), filter, langList) : null,
      aliases.length ? h("details", { class: "more" }, h("summary", {}, t("palette.openaiVoices", { count: aliases.length })), this._list(slot, aliases, headingId)) : null,
    );
  }

  _list(slot, rows, headingId) {
    return h("ul", { class: "components", "aria-labelledby": headingId }, rows.map((row) => h("li", {}, this._item(slot, row))));
  }

  _item(slot, row) {
    const reasonId = `reason-${slot}-${row.key.replace(/[^\w-]/g, "_")}`;
    const card = CARD_OF[slot].toUpperCase();
    const btn = h(
      "button",
      {
        type: "button",
        class: "component",
        draggable: row.available ? "true" : "false",
        "aria-disabled": row.available ? undefined : "true",
        "aria-pressed": "false",
        "aria-describedby": row.reason || row.description ? reasonId : undefined,
        title: row.available ? t("palette.dragTitle", { card }) : row.reason,
        dataset: { slot, key: row.key },
      },
      h("span", { class: "label" }, componentLabel(slot, row.key, row.label)),
      row.reason ? h("small", { class: "reason", id: reasonId }, row.reason) : row.description ? h("small", { class: "desc", id: reasonId }, row.description) : null,
    );
    btn.addEventListener("click", () => this.hooks.onChoose(slot, row.key, "click"));
    btn.addEventListener("dragstart", (e) => {
      if (!row.available) {
        e.preventDefault();
        this.setRefusal(slot, row.reason || t("palette.notAvailable"));
        return;
      }
      e.dataTransfer.setData(DRAG_TYPE, JSON.stringify({ slot, key: row.key }));
      e.dataTransfer.setData(slotDragType(slot), row.key);
      e.dataTransfer.setData("text/plain", row.label);
      e.dataTransfer.effectAllowed = "copy";
      document.body.classList.add("dragging-component");
      this.cards[CARD_OF[slot]].classList.add("drop-hint");
    });
    btn.addEventListener("dragend", () => {
      document.body.classList.remove("dragging-component");
      for (const c of Object.values(this.cards)) c.classList.remove("drop-hint", "drop-ok", "drop-no");
    });
    return btn;
  }

  labelOf(slot, key) {
    const row = (this.palettes[slot] || []).find((r) => r.key === key);
    if (row) return componentLabel(slot, key, row.label);
    if (key === null || key === undefined) return "–";
    return componentLabel(slot, key, key);
  }

  /** The server's confirmed choice for a slot. */
  setCurrent(slot, key) {
    this.current[slot] = key;
    delete this.pending[slot];
    const el = document.querySelector(`[data-slot-value="${slot}"]`);
    el.textContent = this.labelOf(slot, key);
    el.dataset.key = key ?? "";
    el.classList.remove("pending");
    for (const btn of document.querySelectorAll(`.component[data-slot="${slot}"]`)) {
      btn.setAttribute("aria-pressed", String(btn.dataset.key === key));
    }
  }

  setPending(slot, key) {
    this.pending[slot] = key;
    const el = document.querySelector(`[data-slot-value="${slot}"]`);
    el.textContent = t("card.pending", { label: this.labelOf(slot, key) });
    el.classList.add("pending");
    this.setRefusal(slot, null);
  }

  /** A refused choice: why (or null to clear). */
  setRefusal(slot, message, card = CARD_OF[slot]) {
    const el = this.cards[card].querySelector(".refusal");
    el.hidden = !message;
    el.textContent = message || "";
    if (message) {
      this.cards[card].classList.add("refused");
      setTimeout(() => this.cards[card].classList.remove("refused"), 1200);
    }
  }

  setStages(stages) {
    this.stages = stages;
    for (const [card, key] of [["input", "asr"], ["llm", "llm"], ["tts", "tts"]]) {
      const el = this.cards[card].querySelector(".state");
      el.dataset.state = stages[key];
      el.textContent = stateLabel(stages[key]);
      this.cards[card].dataset.state = stages[key];
    }
  }

  /** The last turn's per-stage latency (from turnSegments; null: no turn yet). */
  setLatency(seg) {
    this.latency = seg;
    const s = seg || {};
    this.cards.input.querySelector(".latency").textContent = t("card.asrLatency", { ms: fmtMs(s.asr) });
    this.cards.llm.querySelector(".latency").textContent = t("card.llmLatency", { ms: fmtMs(s.llm, "+") });
    this.cards.tts.querySelector(".latency").textContent = t("card.ttsLatency", { ms: fmtMs(s.tts, "+") });
    for (const c of Object.values(this.cards)) c.querySelector(".latency").toggleAttribute("data-filled", Boolean(seg));
  }

  /** The language the last spoken turn was heard in (an ISO 639-1 code; null when the
   *  server did not say; undefined: no spoken turn yet, the line is hidden). */
  setHeard(language) {
    this.heard = language;
    const el = this.cards.input.querySelector(".heard");
    el.hidden = language === undefined;
    el.dataset.language = language ?? "";
    el.textContent = language === undefined ? "" : t("card.heard", { language: languageName(language) });
  }

  setTurns(turns) {
    this.turns = turns;
    $("chart-svg").innerHTML = turns.length ? chartSvg(turns) : "";
    $("chart-legend").replaceChildren(
      ...STAGES.map((s) => h("span", { class: "key" }, h("i", { style: `background:${s.color}` }), s.label)),
      h("span", { class: "hint" }, turns.length ? t("chart.hint", { count: turns.length }) : t("chart.hintEmpty")),
    );
  }

  /** Write everything again in the page's (new) language; what is shown stays. */
  relabel() {
    if (this.loading) this.setPalettesLoading(this.loading);
    else if (Object.keys(this.palettes).length) this.setPalettes(this.palettes);
    for (const [slot, key] of Object.entries(this.current)) if (!(slot in this.pending)) this.setCurrent(slot, key);
    for (const [slot, key] of Object.entries(this.pending)) {
      const current = this.current[slot];
      if (current !== undefined) this.setCurrent(slot, current); // the palette's pressed entry
      this.setPending(slot, key);
    }
    this.setStages(this.stages);
    this.setLatency(this.latency);
    this.setTurns(this.turns);
    this.setHeard(this.heard);
  }
}
