import assert from "node:assert/strict";
import { test } from "node:test";

import { setLanguage } from "../../web/lib/i18n.js";
import { closeInfo, shorten, elide, errorMessage, isAudioEvent, looksLikeAudio, micErrorMessage, parseEvent, retryView, sessionPatch, sessionUpdate, sessionView, slotOfParam, thinkingSummary } from "../../web/lib/events.js";

test("GA events pass as they are; beta names map to GA", () => {
  assert.equal(parseEvent('{"type":"response.output_audio.delta","delta":"AA=="}').type, "response.output_audio.delta");
  const beta = parseEvent({ type: "response.audio_transcript.delta", delta: "Hi" });
  assert.equal(beta.type, "response.output_audio_transcript.delta");
  assert.equal(beta.wireType, "response.audio_transcript.delta");
  assert.equal(parseEvent({ type: "conversation.item.created", item: {} }).type, "conversation.item.added");
  assert.equal(parseEvent({ type: "response.text.delta" }).type, "response.output_text.delta");
});

test("what is not an event is dropped", () => {
  assert.equal(parseEvent("not json"), null);
  assert.equal(parseEvent("[1]"), null);
  assert.equal(parseEvent('{"no":"type"}'), null);
  assert.equal(parseEvent("null"), null);
});

const GA_SESSION = {
  type: "realtime",
  id: "sess_1",
  instructions: "Be brief.",
  output_modalities: ["audio"],
  max_output_tokens: 128,
  model: "r1voice",
  r1voice: { max_reasoning_tokens: 256, model: "qwen2.5-coder-0.5b-instruct" },
  audio: {
    input: { format: { type: "audio/pcm", rate: 24000 }, transcription: { model: "whisper-tiny.en" }, turn_detection: { type: "server_vad", silence_duration_ms: 500 } },
    output: { voice: "espeak-ng", speed: 1.5 },
  },
};

test("the session view reads the GA shape", () => {
  const v = sessionView(GA_SESSION);
  assert.equal(v.voice, "espeak-ng");
  assert.equal(v.speed, 1.5);
  assert.deepEqual(v.turnDetection, { type: "server_vad", silence_duration_ms: 500 });
  assert.equal(v.transcriptionModel, "whisper-tiny.en");
  assert.deepEqual(v.modalities, ["audio"]);
  assert.equal(v.maxOutputTokens, 128);
  assert.equal(v.llm, "qwen2.5-coder-0.5b-instruct");
});

test("the session view reads the beta shape, and null turn detection is manual", () => {
  const v = sessionView({ voice: "alloy", turn_detection: null, input_audio_transcription: { model: "whisper-1" }, modalities: ["text"], temperature: 0.7 });
  assert.equal(v.voice, "alloy");
  assert.equal(v.turnDetection, null);
  assert.equal(v.transcriptionModel, "whisper-1");
  assert.equal(v.transcriptionLanguage, null, "not said: detected per turn");
  assert.equal(v.temperature, 0.7);
  assert.equal(sessionView({ input_audio_transcription: { model: "whisper-base", language: "zh" } }).transcriptionLanguage, "zh");
  assert.equal(sessionView({ audio: { input: { transcription: { model: "whisper-base", language: "en" } } } }).transcriptionLanguage, "en");
  assert.deepEqual(sessionView(undefined).voice, undefined);
});

test("session.update is GA-shaped and carries only what changes", () => {
  assert.deepEqual(sessionPatch({ voice: "espeak-ng" }), { type: "realtime", audio: { output: { voice: "espeak-ng" } } });
  assert.deepEqual(sessionPatch({ turnDetection: null }), { type: "realtime", audio: { input: { turn_detection: null } } });
  assert.deepEqual(sessionPatch({ instructions: "x", temperature: 0.5 }), { type: "realtime", instructions: "x", temperature: 0.5 });
  assert.deepEqual(sessionPatch({ transcriptionModel: "whisper-base", speed: 2 }), {
    type: "realtime",
    audio: { input: { transcription: { model: "whisper-base" } }, output: { speed: 2 } },
  });
  assert.deepEqual(sessionPatch({ llm: "qwen2.5-coder-0.5b-instruct" }), { type: "realtime", model: "qwen2.5-coder-0.5b-instruct" });
  // the speech language rides with the transcription model, or alone (null: detect it)
  assert.deepEqual(sessionPatch({ transcriptionModel: "whisper-base", transcriptionLanguage: "zh" }).audio.input.transcription, { model: "whisper-base", language: "zh" });
  assert.deepEqual(sessionPatch({ transcriptionLanguage: null }), { type: "realtime", audio: { input: { transcription: { language: null } } } });
  const ev = sessionUpdate({ voice: "a" }, "evt_1");
  assert.equal(ev.type, "session.update");
  assert.equal(ev.event_id, "evt_1");
  assert.equal(sessionUpdate({}).event_id, undefined);
});

test("audio payloads are elided in the log, other fields kept", () => {
  const append = { type: "input_audio_buffer.append", audio: "AAAAAA==", event_id: "e" };
  assert.deepEqual(elide(append), { type: "input_audio_buffer.append", audio: "<4 bytes of audio>", event_id: "e" });
  assert.equal(append.audio, "AAAAAA==", "the original is untouched");
  const delta = parseEvent({ type: "response.audio.delta", delta: "AAAA", item_id: "i" });
  assert.deepEqual(elide(delta), { type: "response.output_audio.delta", delta: "<3 bytes of audio>", item_id: "i" });
  assert.ok(isAudioEvent(delta));
  const text = { type: "response.output_text.delta", delta: "Paris" };
  assert.deepEqual(elide(text), text);
  assert.ok(!isAudioEvent(text));
});

test("a refused field names its pipeline slot", () => {
  assert.equal(slotOfParam("session.voice"), "tts");
  assert.equal(slotOfParam("session.audio.output.voice"), "tts");
  assert.equal(slotOfParam("session.audio.input.turn_detection.type"), "turn");
  assert.equal(slotOfParam("session.input_audio_transcription.model"), "asr");
  assert.equal(slotOfParam("session.instructions"), null);
  assert.equal(slotOfParam("session.input_audio_transcription.language"), null, "the speech language is no card's");
  assert.equal(slotOfParam(null), null);
});

test("error messages for people", () => {
  assert.match(errorMessage({ code: "server_busy", message: "queue full (4096 tokens)" }), /busy/);
  assert.doesNotMatch(errorMessage({ code: "server_busy", message: "queue full (4096 tokens)" }), /4096/);
  assert.match(errorMessage({ code: "unsupported_voice", message: "voice 'x' is not available" }), /voice 'x'/);
  assert.equal(errorMessage({ code: "weird", message: "Something." }), "Something.");
  assert.equal(errorMessage(undefined), "unknown error");
  const long = `voice 'x' is not available; available: [${Array.from({ length: 100 }, (_, i) => `'v${i}'`).join(", ")}]`;
  assert.equal(errorMessage({ code: "unsupported_voice", message: long }), "The server does not offer that voice. (voice 'x' is not available; available: […])");
  assert.ok(shorten("x".repeat(500)).length <= 200);
});

test("socket closes: warming up, refused, lost", () => {
  assert.equal(closeInfo(1013).kind, "not_ready");
  assert.ok(closeInfo(1013).retry);
  assert.equal(closeInfo(1008, "bad key").retry, false);
  assert.match(closeInfo(1008, "bad key").message, /bad key/);
  assert.equal(closeInfo(1006).kind, "lost");
  assert.equal(closeInfo(4000).kind, "unreachable");
});

test("microphone errors", () => {
  assert.equal(micErrorMessage({ name: "NotAllowedError" }).kind, "denied");
  assert.match(micErrorMessage({ name: "NotAllowedError" }).message, /denied/);
  assert.equal(micErrorMessage({ name: "NotFoundError" }).kind, "missing");
  assert.equal(micErrorMessage({ name: "NotReadableError" }).kind, "busy");
  assert.equal(micErrorMessage({ name: "NoMediaDevices" }).kind, "insecure");
  assert.equal(micErrorMessage(new Error("boom")).kind, "other");
});

test("dropped files: audio by type or name", () => {
  assert.ok(looksLikeAudio({ name: "q.wav", type: "audio/wav" }));
  assert.ok(looksLikeAudio({ name: "q.flac", type: "" }));
  assert.ok(looksLikeAudio({ name: "clip", type: "video/webm" }));
  assert.ok(!looksLikeAudio({ name: "notes.txt", type: "text/plain" }));
  assert.ok(!looksLikeAudio({ name: "photo.png", type: "image/png" }));
});

test("waiting to reconnect: the status line and the notice", () => {
  assert.deepEqual(retryView(closeInfo(1013), 2600, false), {
    state: "not-ready",
    status: "server starting; retrying in 3 s…",
    notice: "not-ready",
    replaces: "connection",
    message: "The server is starting up (loading and warming up its models). Reconnecting in 3 s.",
  });
  assert.deepEqual(retryView(closeInfo(1006), 300, true), {
    state: "reconnecting",
    status: "disconnected; retrying in 1 s…",
    notice: "connection",
    replaces: "not-ready",
    message: "Lost the connection to the server (code 1006). Reconnecting in 1 s; the conversation stays on screen.",
  });
});

test("the thinking panel says when the budget cut the thinking", () => {
  assert.equal(thinkingSummary({ type: "r1voice.reasoning.done", item_id: "item_1", cut: true }), "thinking (cut at the budget)");
  assert.equal(thinkingSummary({ type: "r1voice.reasoning.done", item_id: "item_1", cut: false }), "thinking");
  assert.equal(thinkingSummary({ type: "r1voice.reasoning.done", item_id: "item_1" }), "thinking");
  assert.equal(thinkingSummary(undefined), "thinking");
});

test("the page's own words follow its language; the server's message does not", () => {
  try {
    setLanguage("zh-CN");
    const refused = { code: "unsupported_language", message: "'whisper-tiny.en' transcribes only en; for 'zh' choose 'whisper-base'" };
    assert.equal(errorMessage(refused), "语音识别模型不支持这种语言。 ('whisper-tiny.en' transcribes only en; for 'zh' choose 'whisper-base')");
    assert.equal(errorMessage({ code: "weird", message: "Something." }), "Something.");
    assert.equal(errorMessage(undefined), "未知错误");
    assert.equal(closeInfo(1006).message, "与服务器的连接已断开（代码 1006）。");
    assert.equal(retryView(closeInfo(1013), 2600, false).status, "服务器正在启动；3 秒后重试…");
    assert.equal(micErrorMessage({ name: "NotAllowedError" }).kind, "denied");
    assert.match(micErrorMessage({ name: "NotAllowedError" }).message, /麦克风权限被拒绝/);
    assert.equal(thinkingSummary({ cut: true }), "思考（达到预算后被截断）");
  } finally {
    setLanguage("en");
  }
  assert.match(errorMessage({ code: "unsupported_language", message: "x" }), /^The speech recognition model cannot take that language\. \(x\)$/);
});

test("GPT-Live's audio events are elided in the log too", () => {
  assert.deepEqual(elide({ type: "session.input_audio.append", audio: "AAAAAA==" }), { type: "session.input_audio.append", audio: "<4 bytes of audio>" });
  assert.deepEqual(elide({ type: "session.output_audio.delta", delta: "AAAAAA==" }), { type: "session.output_audio.delta", delta: "<4 bytes of audio>" });
  assert.equal(isAudioEvent({ type: "session.output_audio.delta", delta: "" }), true);
});
