import assert from "node:assert/strict";
import { test } from "node:test";

import { accepts, chineseDefaults, componentLabel, currentKey, fieldsFor, palettes, slotDragType, slotFromDragTypes, slotsOfFields, slotTitle, turnDetectionValue } from "../../web/lib/components.js";
import { setLanguage } from "../../web/lib/i18n.js";
import { Backoff } from "../../web/lib/backoff.js";

const BODY = {
  ready: true,
  asr: [{ id: "whisper-tiny.en", label: "whisper-tiny.en", available: true, active: true }, { id: "whisper-base", available: false, reason: "not loaded" }],
  turn_detection: [{ id: "server_vad", available: true }, { id: null, available: true }, { id: "semantic_vad", available: false, reason: "not implemented yet" }],
  llm: [
    { id: "smollm2-135m-instruct", available: true, active: true },
    { id: "qwen2.5-coder-0.5b-instruct", available: true, active: false },
  ],
  tts: [{ id: "piper", available: true }, { id: "espeak-ng", available: true }],
};

test("palettes per slot; the manual entry gets a key", () => {
  const p = palettes(BODY);
  assert.deepEqual(Object.keys(p).sort(), ["asr", "llm", "tts", "turn"]);
  assert.deepEqual(p.turn.map((r) => r.key), ["server_vad", "none", "semantic_vad"]);
  assert.equal(p.turn[1].id, null);
  assert.deepEqual(palettes({}).tts, []);
});

test("which card takes which component", () => {
  assert.ok(accepts("tts", "tts"));
  assert.ok(accepts("input", "asr") && accepts("input", "turn"));
  assert.ok(!accepts("tts", "asr"));
  assert.ok(!accepts("llm", "tts"));
});

test("a drop becomes session fields", () => {
  assert.deepEqual(fieldsFor("tts", "espeak-ng"), { voice: "espeak-ng" });
  assert.deepEqual(fieldsFor("asr", "whisper-base"), { transcriptionModel: "whisper-base" });
  assert.deepEqual(fieldsFor("turn", null), { turnDetection: null });
  assert.deepEqual(fieldsFor("turn", "server_vad", { turnDetection: { type: "server_vad", silence_duration_ms: 800, create_response: true } }), {
    turnDetection: { type: "server_vad", silence_duration_ms: 800 },
  });
  assert.deepEqual(fieldsFor("llm", "qwen2.5-coder-0.5b-instruct"), { llm: "qwen2.5-coder-0.5b-instruct" });
  assert.deepEqual(turnDetectionValue("semantic_vad", null), { type: "semantic_vad" });
  // semantic VAD chooses its own silence window: server VAD's knobs are not carried over
  assert.deepEqual(turnDetectionValue("semantic_vad", { type: "server_vad", silence_duration_ms: 500 }), { type: "semantic_vad" });
  assert.deepEqual(turnDetectionValue("semantic_vad", { type: "semantic_vad", eagerness: "low", silence_duration_ms: 1200 }), { type: "semantic_vad", eagerness: "low" });
  assert.deepEqual(turnDetectionValue("server_vad", { type: "semantic_vad", eagerness: "low", silence_duration_ms: 1200 }), { type: "server_vad" });
  assert.equal(turnDetectionValue("none"), null);
});

test("the card shows the session's current choice", () => {
  const p = palettes(BODY);
  const view = { voice: "espeak-ng", transcriptionModel: "whisper-tiny.en", turnDetection: null };
  assert.equal(currentKey("tts", view), "espeak-ng");
  assert.equal(currentKey("asr", view), "whisper-tiny.en");
  assert.equal(currentKey("turn", view), "none");
  assert.equal(currentKey("turn", { turnDetection: { type: "server_vad" } }), "server_vad");
  assert.equal(currentKey("llm", view, p.llm), "smollm2-135m-instruct"); // not told: the default
  assert.equal(currentKey("llm", { llm: "qwen2.5-coder-0.5b-instruct" }, p.llm), "qwen2.5-coder-0.5b-instruct");
});

test("the slot travels in a MIME type readable during dragover", () => {
  assert.equal(slotFromDragTypes(["text/plain", slotDragType("tts")]), "tts");
  assert.equal(slotFromDragTypes(["Files"]), null);
  assert.equal(slotFromDragTypes(undefined), null);
});

test("reconnect backoff grows, is capped, and resets", () => {
  const b = new Backoff({ base: 500, cap: 4000, random: () => 1 });
  assert.deepEqual([b.next(), b.next(), b.next(), b.next(), b.next()], [500, 1000, 2000, 4000, 4000]);
  b.reset();
  assert.equal(b.next(), 500);
  const low = new Backoff({ base: 500, cap: 4000, random: () => 0 });
  assert.equal(low.next(), 250, "jitter keeps at least half");
});

const ZH_BODY = {
  ...BODY,
  asr: [
    { id: "whisper-tiny.en", label: "whisper-tiny.en (English only)", available: true, active: true, languages: ["en"] },
    { id: "whisper-small", label: "whisper-small (99 languages)", available: true, languages: ["en", "zh", "ja"] },
    { id: "whisper-base", label: "whisper-base (99 languages)", available: true, languages: ["en", "zh", "ja"] },
  ],
  tts: [{ id: "piper", available: true }, { id: "auto", available: true, engine: "auto" }],
};
const DEFAULT_VIEW = { transcriptionModel: "whisper-tiny.en", voice: "piper", turnDetection: { type: "server_vad" } };

test("opened in Chinese: whisper-base, Qwen and the voice auto, where the server offers them", () => {
  const p = palettes(ZH_BODY);
  assert.deepEqual(chineseDefaults(p, DEFAULT_VIEW), [
    ["asr", "whisper-base"],
    ["llm", "qwen2.5-coder-0.5b-instruct"],
    ["tts", "auto"],
  ]);
  // what the user chose stays; what the session has already is not asked for again
  assert.deepEqual(chineseDefaults(p, DEFAULT_VIEW, ["llm", "tts"]), [["asr", "whisper-base"]]);
  const chinese = { ...DEFAULT_VIEW, transcriptionModel: "whisper-small", voice: "auto", llm: "qwen2.5-coder-0.5b-instruct" };
  assert.deepEqual(chineseDefaults(p, chinese), []);
});

test("opened in Chinese on a server whose LLM is a Qwen: the LLM is kept", () => {
  const rows = [...BODY.llm.map((r) => ({ ...r, active: false })), { id: "qwen2.5-coder-1.5b-instruct", available: true, active: true }];
  const onQwen = palettes({ ...BODY, llm: rows });
  assert.deepEqual(chineseDefaults(onQwen, DEFAULT_VIEW, ["tts"]), []); // not the 0.5B listed first
  const onSmol = { ...DEFAULT_VIEW, llm: "smollm2-135m-instruct" };
  assert.deepEqual(chineseDefaults(onQwen, onSmol, ["tts"]), [["llm", "qwen2.5-coder-0.5b-instruct"]]);
});

test("opened in Chinese on a server without them: nothing asked for", () => {
  const bare = palettes({ ...BODY, llm: [{ id: "smollm2-135m-instruct", available: true, active: true }, { id: "qwen2.5-coder-0.5b-instruct", available: false, reason: "not prepared" }] });
  assert.deepEqual(chineseDefaults(bare, DEFAULT_VIEW), []); // whisper-base unavailable, no languages said, no auto
  const noBase = palettes({ ...ZH_BODY, asr: ZH_BODY.asr.filter((r) => r.id !== "whisper-base") });
  assert.deepEqual(chineseDefaults(noBase, DEFAULT_VIEW, ["llm", "tts"]), [["asr", "whisper-small"]]); // another multilingual one
});

test("which slots the user's fields chose", () => {
  assert.deepEqual(slotsOfFields({ voice: "a", speed: 1, transcriptionModel: "m", transcriptionLanguage: "zh" }).sort(), ["asr", "tts"]);
  assert.deepEqual(slotsOfFields(null), []);
});

test("the page's words for what it knows; the server's labels and names otherwise", () => {
  try {
    assert.equal(componentLabel("turn", "none", "Manual (push-to-talk)"), "Manual (push-to-talk)");
    assert.equal(slotTitle("llm"), "Language model");
    setLanguage("zh-CN");
    assert.equal(componentLabel("turn", "none", "Manual (push-to-talk)"), "手动（按键说话）");
    assert.equal(componentLabel("tts", "auto", "Auto: a voice of the answer's language"), "自动：与回答语言一致的声音");
    assert.equal(componentLabel("asr", "whisper-base", "whisper-base (99 languages)"), "whisper-base (99 languages)");
    assert.equal(componentLabel("turn", "future_vad", "Future VAD"), "Future VAD");
    assert.equal(slotTitle("llm"), "语言模型");
  } finally {
    setLanguage("en");
  }
});
