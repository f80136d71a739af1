// The r1voice page: the ASR -> LLM -> TTS pipeline on screen, swappable by drag and drop,
// and a voice conversation over the Realtime WebSocket (GA dialect). Plain ES modules.
//
// `window.r1voice` holds debug state for tests and the console: counts of server events by
// type, answer audio received / scheduled / played (24 kHz samples), flushes, turn
// metrics, responses (with the voice they used), the session as the server confirmed it.
import { authHeaders } from "./lib/auth.js";
import { metricsLine, turnSegments } from "./lib/chart.js";
import { Choices } from "./lib/choices.js";
import { currentKey, fieldsFor, palettes as toPalettes } from "./lib/components.js";
import { micOptions } from "./lib/devices.js";
import { errorMessage, looksLikeAudio, micErrorMessage, sessionUpdate, sessionView } from "./lib/events.js";
import { keptText, userMessage } from "./lib/items.js";
import { Pacer } from "./lib/pacing.js";
import { concat, encodeAudio, meterValue } from "./lib/pcm.js";
import { formFields, formValues } from "./lib/settings.js";
import { StageTracker } from "./lib/stages.js";
import { Answers } from "./ui/answers.js";
import { AudioEngine, RATE } from "./ui/audio.js";
import { RealtimeClient } from "./ui/client.js";
import { Conversation } from "./ui/conversation.js";
import { $, announce, h } from "./ui/dom.js";
import { EventLog } from "./ui/eventlog.js";
import { Notices } from "./ui/notices.js";
import { PipelineView } from "./ui/pipeline.js";

const debug = (window.r1voice = {
  events: {},
  audioDeltas: 0,
  audioSamples: 0,
  scheduled: 0,
  played: 0,
  dropped: 0,
  flushes: [],
  turns: [],
  responses: [],
  session: null,
  notices: [],
  copied: null,
  sessions: 0,
});

// ---- state --------------------------------------------------------------------------
let view = {}; // sessionView of the server's confirmed session
let rawSession = null;
let paletteData = null;
const choices = new Choices();
let handsFreeTurn = "server_vad"; // the server's default turn detection (session.created)
let streaming = false; // mic frames go to the server
let sentSamples = 0; // since the current push-to-talk press
let pttHeld = false;
let lastPress = null; // what to retry after a mic error
let fileJob = null;

const notices = new Notices($("notices"), { onShow: (kind, message) => debug.notices.push({ kind, message }) });
const conversation = new Conversation($("log"));
const eventLog = new EventLog({ list: $("devlog-list"), filter: $("devlog-filter"), clear: $("devlog-clear"), count: $("devlog-count") });
const pipeline = new PipelineView({ onChoose: choose });
const stages = new StageTracker((state) => pipeline.setStages(state));
const audio = new AudioEngine({
  onFrame: (samples) => {
    if (streaming && !fileJob) {
      client.send({ type: "input_audio_buffer.append", audio: encodeAudio(samples) });
      sentSamples += samples.length;
    }
  },
  onLevel: ({ peak }) => {
    $("level").value = meterValue(peak);
  },
  onPlayed: (played, idle) => answers.played(played, idle),
});
const client = new RealtimeClient(notices, {
  onEvent,
  onSend: (ev) => eventLog.add("out", ev),
  onClosed: () => {
    stopStreaming({ commit: false });
    answers.reset();
    stages.reset();
    updateTalk();
  },
  onKey: () => (paletteData = null),
});
const answers = new Answers({ audio, client, conversation, notices, stages, debug, sessionVoice: () => view.voice });

const isPtt = () => view.turnDetection === null;

function onSessionCreated(ev) {
  if (client.sessionStarted()) conversation.divider("Reconnected: a new session (the server starts a fresh conversation)");
  debug.sessions = client.sessions;
  // Hands-free mode returns to the turn detection the server starts sessions with.
  onSession(ev.session);
  if (view.turnDetection) handsFreeTurn = view.turnDetection.type;
  const wanted = choices.wanted();
  if (wanted) client.send(sessionUpdate(wanted)); // keep the user's choices
  if (!paletteData) loadComponents();
  updateTalk();
}

// ---- the session's configuration (cards, settings, drag and drop) ----------------------
function onSession(session) {
  rawSession = session;
  view = sessionView(session);
  debug.session = view;
  for (const slot of ["turn", "asr", "tts", "llm"]) {
    const key = currentKey(slot, view, paletteData ? paletteData.llm : []);
    const outcome = choices.settle(slot, key);
    if (outcome === "used") {
      announce(`${pipeline.labelOf(slot, key)} is now in use.`);
      pipeline.setRefusal(slot, null);
    } else if (outcome === "kept") pipeline.setRefusal(slot, `The server kept ${pipeline.labelOf(slot, key)}.`);
    pipeline.setCurrent(slot, key);
  }
  for (const input of document.querySelectorAll("input[name=mode]")) {
    input.checked = input.value === (isPtt() ? "push-to-talk" : "hands-free");
  }
  fillSettings();
  updateTalk();
}

function choose(slot, key) {
  const rows = (paletteData && paletteData[slot]) || [];
  const row = rows.find((r) => r.key === key);
  if (row && !row.available) {
    pipeline.setRefusal(slot, `${row.label}: ${row.reason || "not available"}`);
    announce(`${row.label} is not available: ${row.reason}`);
    return;
  }
  const id = row ? row.id : key === "none" ? null : key;
  const fields = fieldsFor(slot, id, view);
  if (!fields) {
    const msg = "This server runs one language model; it is chosen when the server starts (R1VOICE_LLM_MODEL).";
    pipeline.setRefusal(slot, row && row.active ? `Already in use. ${msg}` : msg);
    return;
  }
  if (!client.isOpen) {
    pipeline.setRefusal(slot, "Not connected: the choice will be tried when the page reconnects.");
    choices.remember(fields);
    return;
  }
  const eventId = client.nextId("evt_choose");
  choices.propose(slot, key, eventId, fields);
  pipeline.setPending(slot, key);
  client.send(sessionUpdate(fields, eventId));
}

async function loadComponents(attempt = 0) {
  try {
    const res = await fetch("/v1/r1voice/components", { headers: authHeaders(sessionStorage) });
    if (res.status === 401) return; // the key prompt is up; a connect loads them again
    if (res.status === 503) throw new Error("the server is still loading its models");
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    paletteData = toPalettes(await res.json());
    pipeline.setPalettes(paletteData);
    if (rawSession) onSession(rawSession);
  } catch (err) {
    pipeline.setPalettesLoading(`Components not available yet (${err.message}); retrying…`);
    setTimeout(() => loadComponents(attempt + 1), Math.min(10000, 1000 * 2 ** attempt));
  }
}

// ---- server events ----------------------------------------------------------------------
function onEvent(ev) {
  debug.events[ev.type] = (debug.events[ev.type] || 0) + 1;
  if (ev.wireType) debug.events[ev.wireType] = (debug.events[ev.wireType] || 0) + 1;
  eventLog.add("in", ev);
  stages.update(ev);
  switch (ev.type) {
    case "session.created":
      onSessionCreated(ev);
      break;
    case "session.updated":
      onSession(ev.session);
      break;
    case "input_audio_buffer.speech_started":
      answers.bargeIn("speech_started");
      conversation.userPartial(ev.item_id);
      break;
    case "input_audio_buffer.committed":
      if (ev.item_id) conversation.userPartial(ev.item_id);
      break;
    case "conversation.item.input_audio_transcription.delta":
      conversation.userDelta(ev.item_id, ev.delta || "");
      break;
    case "conversation.item.input_audio_transcription.completed":
      conversation.userFinal(ev.item_id, (ev.transcript || "").trim());
      break;
    case "conversation.item.input_audio_transcription.failed":
      conversation.userFailed(ev.item_id, errorMessage(ev.error));
      break;
    case "conversation.item.added":
    case "conversation.item.done":
      conversation.userItem(userMessage(ev.item));
      break;
    case "conversation.item.deleted":
      conversation.remove(ev.item_id);
      break;
    case "conversation.item.truncated": // ask what the server now keeps, to show it
      if (conversation.has(ev.item_id)) client.send({ type: "conversation.item.retrieve", item_id: ev.item_id }, { background: true });
      break;
    case "conversation.item.retrieved": {
      const kept = keptText(ev.item);
      if (kept !== null) conversation.setHeard(ev.item.id, kept);
      break;
    }
    case "response.created":
      answers.created(ev.response);
      break;
    case "response.output_item.added":
      answers.itemStarted(ev.response_id, ev.item);
      break;
    case "response.output_audio_transcript.delta":
    case "response.output_text.delta":
      answers.textDelta(ev);
      break;
    case "r1voice.reasoning.delta":
      conversation.reasoningDelta(ev.item_id, ev.delta || "");
      break;
    case "response.output_audio.delta":
      answers.audioDelta(ev);
      break;
    case "response.output_audio.done":
      answers.audioDone();
      break;
    case "response.done":
      answers.done(ev.response);
      break;
    case "r1voice.turn.metrics":
      onMetrics(ev);
      break;
    case "error":
      onError(ev);
      break;
    default:
      break;
  }
}

function onMetrics(ev) {
  debug.turns.push(ev);
  const seg = turnSegments(ev);
  pipeline.setLatency(seg);
  pipeline.setTurns(debug.turns);
  $("metrics").textContent = metricsLine(ev);
}

function onError(ev) {
  const err = ev.error || {};
  const eventId = err.event_id || null;
  if (client.isBackground(eventId)) return; // e.g. a truncate the server did itself
  // a refused drop: name it on its card, and the card shows the kept value again
  const refused = choices.refuse(eventId, err.param);
  if (refused) {
    const label = pipeline.labelOf(refused.slot, refused.key);
    pipeline.setRefusal(refused.slot, `${label} was refused: ${errorMessage(err)}`);
    announce(`${label} was refused: ${err.message || err.code}`);
    if (rawSession) onSession(rawSession); // the card, the mode switch: back to what is used
    return;
  }
  if (err.code === "server_busy") return answers.busy();
  if (err.code === "input_audio_buffer_commit_empty") return notices.show("too-short", errorMessage(err));
  if (err.code === "response_cancel_not_active") return;
  conversation.note(`${err.code || "error"}: ${errorMessage(err)}`, "error");
}

// ---- talking ----------------------------------------------------------------------------
function micFailed(err, retry) {
  const info = micErrorMessage(err);
  notices.show(`mic-${info.kind}`, info.message, [{ label: "Retry", run: () => { notices.clear(`mic-${info.kind}`); retry(); } }]);
  announce(info.message);
}

async function openMic() {
  try {
    await audio.openMic($("mic").value || undefined);
    for (const k of ["denied", "missing", "busy", "insecure", "other"]) notices.clear(`mic-${k}`);
    stages.update({ type: "mic", on: true });
    listMics();
    return true;
  } catch (err) {
    micFailed(err, lastPress || (() => {}));
    return false;
  }
}

function stopStreaming({ commit }) {
  const tail = audio.closeMic();
  if (streaming && tail.length) client.send({ type: "input_audio_buffer.append", audio: encodeAudio(tail) });
  if (streaming && !commit && stages.state.asr === "hearing" && view.turnDetection) {
    // stopped mid-sentence, hands-free: a silence lets server VAD end (and answer) the turn
    const ms = (view.turnDetection.silence_duration_ms || 500) + 300;
    client.send({ type: "input_audio_buffer.append", audio: encodeAudio(new Float32Array(Math.round((RATE * ms) / 1000))) });
  }
  const wasStreaming = streaming;
  streaming = false;
  stages.update({ type: "mic", on: false });
  if (wasStreaming && commit) {
    if (sentSamples < RATE / 10) {
      client.send({ type: "input_audio_buffer.clear" });
      notices.show("too-short", errorMessage({ code: "input_audio_buffer_commit_empty" }));
    } else {
      client.send({ type: "input_audio_buffer.commit" });
      client.send({ type: "response.create" });
    }
  }
  updateTalk();
}

async function toggleHandsFree() {
  lastPress = toggleHandsFree;
  if (streaming || audio.micOpen) return stopStreaming({ commit: false });
  await audio.ensure();
  if (!(await openMic())) return;
  streaming = true;
  sentSamples = 0;
  updateTalk();
}

async function pressToTalk() {
  if (pttHeld) return;
  pttHeld = true;
  lastPress = pressToTalk;
  await audio.ensure();
  answers.bargeIn("push_to_talk");
  notices.clear("too-short");
  sentSamples = 0;
  updateTalk();
  if (!(await openMic())) {
    pttHeld = false;
    updateTalk();
    return;
  }
  streaming = true;
  if (!pttHeld) stopStreaming({ commit: true }); // released while the microphone opened
  updateTalk();
}

function releaseToTalk() {
  if (!pttHeld) return;
  pttHeld = false;
  if (streaming) stopStreaming({ commit: true });
  updateTalk();
}

function updateTalk() {
  const btn = $("talk");
  btn.disabled = !client.connected;
  if (isPtt()) {
    btn.textContent = pttHeld ? "Release to send" : "Hold to talk";
    btn.setAttribute("aria-pressed", String(pttHeld));
  } else {
    btn.textContent = streaming ? "Stop" : "Talk";
    btn.setAttribute("aria-pressed", String(streaming));
  }
  btn.dataset.mode = isPtt() ? "push-to-talk" : "hands-free";
  debug.streaming = streaming;
}

async function listMics() {
  try {
    const mics = await audio.listMics();
    const select = $("mic");
    const chosen = select.value;
    select.replaceChildren(h("option", { value: "" }, "default"), ...micOptions(mics).map((m) => h("option", { value: m.value }, m.label)));
    select.value = [...select.options].some((o) => o.value === chosen) ? chosen : "";
  } catch {
    /* no device list: the default microphone still works */
  }
}

// ---- audio files ------------------------------------------------------------------------
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function sendFile(file) {
  if (!file) return;
  notices.clear("file");
  if (!looksLikeAudio(file)) {
    notices.show("file", `“${file.name}” is not an audio file. Drop a wav, mp3, ogg, webm or flac file.`);
    return;
  }
  if (!client.isOpen) {
    notices.show("file", "Not connected to the server: the file was not sent. Try again once connected.");
    return;
  }
  let samples;
  try {
    samples = await audio.decodeFile(file);
  } catch (err) {
    notices.show("file", `This browser could not decode “${file.name}” (${(err && err.message) || err}). Try a wav, mp3, ogg, webm or flac file.`);
    return;
  }
  if (fileJob) fileJob.cancelled = true;
  const job = (fileJob = { cancelled: false });
  const ptt = isPtt();
  if (ptt) answers.bargeIn("push_to_talk");
  // hands-free: a second of silence after it ends the turn
  const total = ptt ? samples : concat(samples, new Float32Array(RATE * 1.2));
  const box = $("file-progress");
  box.hidden = false;
  box.querySelector(".name").textContent = `Sending “${file.name}” (${(samples.length / RATE).toFixed(1)} s)`;
  const bar = box.querySelector("progress");
  box.querySelector(".stop").onclick = () => (job.cancelled = true);
  const pacer = new Pacer(total.length, RATE);
  const start = performance.now();
  try {
    while (!pacer.done && !job.cancelled) {
      for (const [from, to] of pacer.due(performance.now() - start)) {
        if (!client.send({ type: "input_audio_buffer.append", audio: encodeAudio(total.subarray(from, to)) })) throw new Error("disconnected");
      }
      bar.value = pacer.progress;
      await sleep(20);
    }
    if (ptt && !job.cancelled) {
      client.send({ type: "input_audio_buffer.commit" });
      client.send({ type: "response.create" });
    }
  } catch {
    notices.show("file", `The connection closed while sending “${file.name}”.`);
  } finally {
    if (fileJob === job) fileJob = null;
    box.hidden = true;
  }
}

// ---- settings, copy config --------------------------------------------------------------
function fillSettings() {
  if ($("settings").dataset.dirty === "true") return;
  const values = formValues(view, paletteData);
  $("s-instructions").value = values.instructions;
  $("s-speed").value = values.speed;
  $("s-speed-out").textContent = String(values.speed);
  $("s-turn").value = values.turn;
  if (values.silence !== undefined) $("s-silence").value = values.silence;
  if (values.eagerness !== undefined) $("s-eagerness").value = values.eagerness;
  showTurnKnobs();
  if (values.temperature !== undefined) $("s-temperature").value = values.temperature;
  $("s-turn").querySelector("option[value=semantic_vad]").disabled = !values.semanticAvailable;
}

function showTurnKnobs() {
  for (const el of $("settings").querySelectorAll("[data-for-turn]")) el.hidden = el.dataset.forTurn !== $("s-turn").value;
}

function applySettings(e) {
  e.preventDefault();
  const values = { turn: $("s-turn").value, silence: $("s-silence").value, eagerness: $("s-eagerness").value, instructions: $("s-instructions").value, speed: $("s-speed").value, temperature: $("s-temperature").value };
  const fields = formFields(values, view);
  choices.remember(fields);
  $("settings").dataset.dirty = "false";
  const ok = client.send(sessionUpdate(fields));
  $("settings-result").textContent = ok ? "Sent; the cards show what the server confirms." : "Not connected: applied when the page reconnects.";
}

function toggleSettings(open = $("settings").hidden) {
  $("settings").hidden = !open;
  $("settings-toggle").setAttribute("aria-expanded", String(open));
  if (open) {
    fillSettings();
    $("s-instructions").focus();
  } else $("settings-toggle").focus();
}

async function copyConfig() {
  const text = JSON.stringify(rawSession || {}, null, 2);
  debug.copied = text;
  let ok = false;
  try {
    await navigator.clipboard.writeText(text);
    ok = true;
  } catch {
    const area = h("textarea", { class: "visually-hidden" });
    area.value = text;
    document.body.append(area);
    area.select();
    try {
      ok = document.execCommand("copy");
    } catch {
      ok = false;
    }
    area.remove();
  }
  const btn = $("copy-config");
  btn.textContent = ok ? "Copied" : "Copy failed";
  announce(ok ? "Session configuration copied as JSON" : "Could not copy: see the event log for session.updated");
  setTimeout(() => (btn.textContent = "Copy config"), 1500);
}

// ---- wiring -----------------------------------------------------------------------------
const talk = $("talk");
talk.addEventListener("click", (e) => {
  if (!isPtt()) toggleHandsFree();
  else if (e.detail === 0) (pttHeld ? releaseToTalk : pressToTalk)(); // keyboard: Enter toggles
});
talk.addEventListener("pointerdown", (e) => {
  if (!isPtt() || e.button !== 0) return;
  talk.setPointerCapture?.(e.pointerId);
  pressToTalk();
});
for (const type of ["pointerup", "pointercancel", "lostpointercapture"]) {
  talk.addEventListener(type, () => isPtt() && releaseToTalk());
}

const TYPING = "input:not([type=radio]):not([type=checkbox]):not([type=range]), textarea, select, [contenteditable], button:not(#talk), a, summary";
document.addEventListener("keydown", (e) => {
  if (e.code !== "Space" || e.target.closest?.(TYPING) || e.ctrlKey || e.metaKey || e.altKey) return;
  e.preventDefault();
  if (e.repeat || talk.disabled) return;
  if (isPtt()) pressToTalk();
  else toggleHandsFree();
});
document.addEventListener("keyup", (e) => {
  if (e.code !== "Space" || e.target.closest?.(TYPING)) return;
  e.preventDefault();
  if (isPtt()) releaseToTalk();
});
window.addEventListener("blur", () => isPtt() && releaseToTalk());

for (const input of document.querySelectorAll("input[name=mode]")) {
  input.addEventListener("change", () => {
    if (streaming) stopStreaming({ commit: false });
    choose("turn", input.value === "push-to-talk" ? "none" : handsFreeTurn, "mode");
  });
}

$("mic").addEventListener("change", async () => {
  if (!audio.micOpen) return;
  const wasStreaming = streaming;
  audio.closeMic();
  if (await openMic()) streaming = wasStreaming;
});
navigator.mediaDevices?.addEventListener?.("devicechange", listMics);

$("file").addEventListener("change", (e) => {
  const file = e.target.files[0];
  e.target.value = "";
  sendFile(file);
});
const hasFiles = (e) => e.dataTransfer && [...e.dataTransfer.types].includes("Files");
document.addEventListener("dragover", (e) => {
  if (!hasFiles(e)) return;
  e.preventDefault();
  e.dataTransfer.dropEffect = "copy";
  document.body.classList.add("drag-file");
});
document.addEventListener("dragleave", (e) => {
  if (!e.relatedTarget) document.body.classList.remove("drag-file");
});
document.addEventListener("drop", (e) => {
  document.body.classList.remove("drag-file");
  if (!hasFiles(e)) return;
  e.preventDefault();
  sendFile(e.dataTransfer.files[0]);
});

$("text-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const text = $("text").value.trim();
  if (!text) return;
  if (!client.isOpen) {
    notices.show("connection", "Not connected: the message was not sent. It stays in the box; send it again once connected.");
    return;
  }
  $("text").value = "";
  audio.ensure(); // a user gesture: lets the answer play
  answers.bargeIn("push_to_talk");
  client.send({ type: "conversation.item.create", item: { type: "message", role: "user", content: [{ type: "input_text", text }] } });
  client.send({ type: "response.create" });
});

$("settings-toggle").addEventListener("click", () => toggleSettings());
$("settings-close").addEventListener("click", () => toggleSettings(false));
$("settings-form").addEventListener("submit", applySettings);
$("settings-form").addEventListener("input", (e) => {
  $("settings").dataset.dirty = "true";
  if (e.target.id === "s-speed") $("s-speed-out").textContent = e.target.value;
  if (e.target.id === "s-turn") showTurnKnobs();
});
$("settings").addEventListener("keydown", (e) => e.key === "Escape" && toggleSettings(false));
$("copy-config").addEventListener("click", copyConfig);

pipeline.setStages(stages.state);
pipeline.setTurns([]);
pipeline.setPalettesLoading("loading components…");
loadComponents();
listMics();
client.connect();
