// The pipeline's swappable parts: the components endpoint's lists as palettes, which card
// takes which kind, and what `session.update` a drop sends.
import { has, t } from "./i18n.js";

/** Slots of the pipeline: the stage card each sits on, its field, its list in the endpoint. */
export const SLOTS = {
  turn: { card: "input", field: "turnDetection", list: "turn_detection" },
  asr: { card: "input", field: "transcriptionModel", list: "asr" },
  llm: { card: "llm", field: "llm", list: "llm" },
  tts: { card: "tts", field: "voice", list: "tts" },
};

/** A slot's palette title, in the page's language. */
export function slotTitle(slot) {
  return t(`slot.${slot}`);
}

/** What an entry is called on the page: the page's own words for what it knows (the
 *  turn-detection modes, the `auto` voice), else the server's label; model and voice
 *  names are never translated. */
export function componentLabel(slot, key, serverLabel) {
  if (slot === "turn" && has(`turn.${key}`)) return t(`turn.${key}`);
  if (slot === "tts" && key === "auto") return t("voice.auto");
  return serverLabel ?? key;
}

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

/** The slot a `sessionPatch` field chooses (fields the settings or choices hold). */
const SLOT_OF_FIELD = { transcriptionModel: "asr", llm: "llm", voice: "tts", turnDetection: "turn" };

export function slotsOfFields(fields) {
  return Object.keys(fields || {})
    .map((f) => SLOT_OF_FIELD[f])
    .filter(Boolean);
}

/** The pipeline the page asks for when it opens in Chinese: [[slot, key], ...] for a
 *  speech recognizer that takes Chinese (whisper-base before others: small and quick),
 *  an LLM that answers in Chinese (Qwen), and the voice `auto` (a voice of the answer's
 *  language). Each only when the server offers it available, the session does not have
 *  one already, and the user has not chosen that slot (`chosen`: slot names). The
 *  transcription language is left to the session (null: detected per turn). */
export function chineseDefaults(palettes, view, chosen = []) {
  const out = [];
  const usable = (slot) => ((palettes && palettes[slot]) || []).filter((r) => r.available);
  const takesChinese = (r) => Array.isArray(r.languages) && r.languages.includes("zh");
  if (!chosen.includes("asr")) {
    const rows = usable("asr");
    const current = rows.find((r) => r.key === view.transcriptionModel);
    const pick = rows.find((r) => r.key === "whisper-base" && takesChinese(r)) || rows.find(takesChinese);
    if (pick && !(current && takesChinese(current))) out.push(["asr", pick.key]);
  }
  if (!chosen.includes("llm")) {
    // a Qwen the session has already (the server's default 1.5B) answers Chinese: kept
    const current = currentKey("llm", view, palettes.llm || []) || "";
    const pick = usable("llm").find((r) => /qwen/i.test(r.key));
    if (pick && !/qwen/i.test(current)) out.push(["llm", pick.key]);
  }
  if (!chosen.includes("tts") && view.voice !== "auto" && usable("tts").some((r) => r.key === "auto")) out.push(["tts", "auto"]);
  return out;
}
