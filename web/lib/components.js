// The pipeline's swappable parts: the components endpoint's lists as palettes, which card
// takes which kind, and what `session.update` a drop sends.

/** Slots of the pipeline: the stage card each sits on and its palette title. */
export const SLOTS = {
  turn: { card: "input", title: "Turn detection", field: "turnDetection", list: "turn_detection" },
  asr: { card: "input", title: "Speech recognition", field: "transcriptionModel", list: "asr" },
  llm: { card: "llm", title: "Language model", field: "llm", list: "llm" },
  tts: { card: "tts", title: "Voice", field: "voice", list: "tts" },
};

export const CARD_OF = { turn: "input", asr: "input", llm: "llm", tts: "tts" };

/** The endpoint's JSON -> {slot: [{id, label, available, reason, ...}]} (with a key
 *  that is unique even for the `null` turn-detection entry). */
export function palettes(body) {
  const out = {};
  for (const [slot, info] of Object.entries(SLOTS)) {
    out[slot] = (body[info.list] || []).map((row) => ({ ...row, key: row.id === null ? "none" : String(row.id) }));
  }
  return out;
}

/** Whether a card takes a component of slot `slot`. */
export function accepts(card, slot) {
  return CARD_OF[slot] === card;
}

/** The turn_detection value for a turn-detection component id (null = manual). */
export function turnDetectionValue(id, current) {
  if (id === null || id === "none") return null;
  const base = current && typeof current === "object" ? current : {};
  const kept = {};
  // server VAD keeps its knobs; semantic VAD has only eagerness (it picks its own window)
  const knobs = id === "server_vad" && base.type === "server_vad" ? ["threshold", "prefix_padding_ms", "silence_duration_ms"] : id === "semantic_vad" ? ["eagerness"] : [];
  for (const k of knobs) if (base[k] !== undefined && base[k] !== null) kept[k] = base[k];
  return { ...kept, type: id };
}

/** The `sessionPatch` fields that put component `id` in slot `slot`; null for a slot
 *  the page does not know. */
export function fieldsFor(slot, id, view = {}) {
  switch (slot) {
    case "tts":
      return { voice: id };
    case "asr":
      return { transcriptionModel: id };
    case "llm":
      return { llm: id };
    case "turn":
      return { turnDetection: turnDetectionValue(id, view.turnDetection) };
    default:
      return null;
  }
}

/** The key of what the session uses now in `slot` (from a sessionView), for the card. */
export function currentKey(slot, view, llmRows = []) {
  switch (slot) {
    case "tts":
      return view.voice ?? null;
    case "asr":
      return view.transcriptionModel ?? null;
    case "turn":
      return view.turnDetection ? view.turnDetection.type : "none";
    case "llm": {
      if (view.llm) return view.llm;
      // a server that does not say which LLM the session uses: its default
      const active = llmRows.find((r) => r.active) || llmRows[0];
      return active ? active.key : null;
    }
    default:
      return null;
  }
}

/** The drag payload MIME types: one carries the component, one names its slot (the
 *  slot must be readable during dragover, when browsers hide the data itself). */
export const DRAG_TYPE = "application/x-r1voice-component";
export const slotDragType = (slot) => `application/x-r1voice-slot-${slot}`;

export function slotFromDragTypes(types) {
  for (const t of types || []) {
    const m = /^application\/x-r1voice-slot-(\w+)$/.exec(t);
    if (m) return m[1];
  }
  return null;
}
