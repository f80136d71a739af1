// The r1voice page: the ASR -> LLM -> TTS pipeline on screen, swappable by drag and drop,
// and a voice conversation over the Realtime WebSocket (GA dialect). Plain ES modules.
//
// `window.r1voice` holds debug state for tests and the console: counts of server events by
// type, answer audio received / scheduled / played (24 kHz samples), flushes, turn
// metrics, responses (with the voice they used), the session as the server confirmed it.
import { KEY_ITEM, KeyRequired, authHeaders, keyWanted, realtimeProtocols } from "./lib/auth.js";
import { Backoff } from "./lib/backoff.js";
import { turnSegments } from "./lib/chart.js";
import { currentKey, fieldsFor, palettes as toPalettes } from "./lib/components.js";
import { closeInfo, errorMessage, looksLikeAudio, micErrorMessage, parseEvent, sessionUpdate, sessionView, slotOfParam, thinkingSummary } from "./lib/events.js";
import { decodeAudio, encodeAudio, meterValue } from "./lib/pcm.js";
import { PlaybackSchedule } from "./lib/playback.js";
import { IDLE, nextStages } from "./lib/stages.js";
import { AudioEngine, RATE } from "./ui/audio.js";
import { Conversation } from "./ui/conversation.js";
import { $, h } from "./ui/dom.js";
import { EventLog } from "./ui/eventlog.js";
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
let ws = null;
let everConnected = false;
let sessionCount = 0;
let view = {}; // sessionView of the server's confirmed session
let rawSession = null;
let paletteData = null;
let connecting = false; // minting a client secret before the socket opens
let stages = { ...IDLE };
const desired = {}; // fields the user chose: re-applied after a reconnect
const pending = {}; // slot -> {key, eventId}
const backgroundIds = new Set(); // client events whose errors only go to the log
const responses = new Map(); // response id -> {itemId, voice, status}
const stopped = new Set(); // responses whose audio is no longer wanted (barge-in)
let activeResponse = null;
let eventCounter = 0;
let handsFreeTurn = "server_vad"; // the server's default turn detection (session.created)
let streaming = false; // mic frames go to the server
let sentSamples = 0; // since the current push-to-talk press
let pttHeld = false;
let lastPress = null; // what to retry after a mic error
let fileJob = null;
const backoff = new Backoff();
let reconnectTimer = null;
const schedule = new PlaybackSchedule(RATE);

const conversation = new Conversation($("log"));
const eventLog = new EventLog({ list: $("devlog-list"), filter: $("devlog-filter"), clear: $("devlog-clear"), count: $("devlog-count") });
const pipeline = new PipelineView({ onChoose: choose });
const audio = new AudioEngine({
  onFrame: (samples) => {
    if (streaming && !fileJob) {
      send({ type: "input_audio_buffer.append", audio: encodeAudio(samples) });
      sentSamples += samples.length;
    }
  },
  onLevel: ({ peak }) => {
    $("level").value = meterValue(peak);
  },
  onPlayed: (played, idle) => {
    schedule.setPlayed(played);
    debug.played = schedule.played;
    const playing = schedule.isPlaying() && !idle;
    if (playing !== stages.speaking) setStage({ type: "playing", on: playing });
  },
});

const isPtt = () => view.turnDetection === null;
const nextId = (prefix = "evt_page") => `${prefix}_${Date.now().toString(36)}_${++eventCounter}`;

// ---- sending ------------------------------------------------------------------------
function send(ev, { background = false } = {}) {
  if (!ws || ws.readyState !== WebSocket.OPEN) return false;
  if (!ev.event_id) ev.event_id = nextId();
  if (background) backgroundIds.add(ev.event_id);
  ws.send(JSON.stringify(ev));
  eventLog.add("out", ev);
  return true;
}

function setStage(input) {
  stages = nextStages(stages, input);
  pipeline.setStages(stages);
}

function announce(text) {
  $("announce").textContent = text;
}

// ---- notices (errors with a way out) ----------------------------------------------------
function notice(kind, message, actions = []) {
  clearNotice(kind);
  const el = h(
    "div",
    { class: "notice", role: "alert", dataset: { kind } },
    h("span", { class: "text" }, message),
    ...actions.map((a) => h("button", { type: "button", class: "action", onclick: a.run }, a.label)),
    h("button", { type: "button", class: "dismiss", "aria-label": "Dismiss", onclick: () => clearNotice(kind) }, "×"),
  );
  $("notices").append(el);
  debug.notices.push({ kind, message });
  return el;
}

/** The server wants an API key: ask for it (kept for this tab only), then connect. */
function askForKey(message) {
  setStatus("closed", "API key needed");
  const input = h("input", { type: "password", id: "api-key", autocomplete: "off", "aria-label": "API key" });
  const submit = () => {
    if (!input.value) return;
    sessionStorage.setItem(KEY_ITEM, input.value);
    clearNotice("api-key");
    paletteData = null;
    connect();
  };
  input.addEventListener("keydown", (e) => e.key === "Enter" && submit());
  const el = notice("api-key", `${message} Enter it to connect (it is kept for this tab only).`, [{ label: "Connect", run: submit }]);
  el.querySelector(".text").after(input);
  input.focus();
}

function clearNotice(kind) {
  for (const el of $("notices").querySelectorAll(`.notice[data-kind="${kind}"]`)) el.remove();
}

function setStatus(state, text) {
  $("status").dataset.state = state;
  $("status").textContent = text;
}

// ---- the connection ---------------------------------------------------------------------
async function connect() {
  clearTimeout(reconnectTimer);
  reconnectTimer = null;
  if (ws && ws.readyState <= WebSocket.OPEN) return;
  setStatus("connecting", "connecting…");
  if (connecting) return;
  connecting = true;
  let protocols;
  try {
    protocols = await realtimeProtocols(fetch, sessionStorage);
  } catch (err) {
    if (err instanceof KeyRequired) return askForKey(err.message);
    return onDisconnected(4000, "");
  } finally {
    connecting = false;
  }
  const proto = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${proto}://${location.host}/v1/realtime?dialect=ga&r1voice_events=1`, protocols);
  ws = socket;
  socket.onmessage = (m) => {
    const ev = parseEvent(m.data);
    if (ev) onEvent(ev);
  };
  socket.onopen = () => (socket.opened = true);
  socket.onclose = async (e) => {
    if (ws !== socket) return;
    ws = null;
    let code = e.code;
    if (!socket.opened && code !== 1013) code = await probeReadiness(code);
    onDisconnected(code, e.reason);
  };
}

/** A handshake the server refused: browsers see only 1006, so ask readiness why. */
async function probeReadiness(code) {
  try {
    const res = await fetch("/v2/health/ready", { cache: "no-store" });
    if (res.status === 503) return 1013;
    if (await keyWanted(fetch, sessionStorage)) return 4001;
  } catch {
    return 4000; // the server cannot be reached at all
  }
  return code;
}

function onDisconnected(code, reason) {
  ws = null;
  stopStreaming({ commit: false });
  audio.flush();
  schedule.flush();
  activeResponse = null;
  stages = nextStages({ ...IDLE, mic: false }, { type: "reset" });
  pipeline.setStages(stages);
  updateTalk();
  if (code === 4001) return askForKey("This server needs an API key.");
  const info = closeInfo(code, reason);
  if (!info.retry) {
    setStatus("closed", "disconnected");
    notice("connection", info.message, [{ label: "Reconnect", run: () => connect() }]);
    return;
  }
  const delay = backoff.next();
  const seconds = Math.max(1, Math.round(delay / 1000));
  setStatus(info.kind === "not_ready" ? "not-ready" : "reconnecting", `${info.kind === "not_ready" ? "server starting" : "disconnected"}; retrying in ${seconds} s…`);
  const text = `${info.message} Reconnecting in ${seconds} s${everConnected ? "; the conversation stays on screen" : ""}.`;
  notice(info.kind === "not_ready" ? "not-ready" : "connection", text, [{ label: "Reconnect now", run: () => connect() }]);
  if (info.kind === "not_ready") clearNotice("connection");
  else clearNotice("not-ready");
  reconnectTimer = setTimeout(connect, delay);
}

function onSessionCreated(ev) {
  sessionCount += 1;
  debug.sessions = sessionCount;
  backoff.reset();
  clearNotice("connection");
  clearNotice("not-ready");
  setStatus("connected", "connected");
  if (everConnected) conversation.divider("Reconnected: a new session (the server starts a fresh conversation)");
  everConnected = true;
  // Hands-free mode returns to the turn detection the server starts sessions with.
  onSession(ev.session);
  if (view.turnDetection) handsFreeTurn = view.turnDetection.type;
  if (Object.keys(desired).length) send(sessionUpdate(desired)); // keep the user's choices
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
    const wanted = pending[slot];
    if (wanted) {
      if (wanted.key === key) {
        Object.assign(desired, wanted.fields); // kept across reconnects
        announce(`${pipeline.labelOf(slot, key)} is now in use.`);
        pipeline.setRefusal(slot, null);
      } else if (!wanted.eventIdErrored) {
        pipeline.setRefusal(slot, `The server kept ${pipeline.labelOf(slot, key)}.`);
      }
      delete pending[slot];
    }
    pipeline.setCurrent(slot, key);
  }
  for (const input of document.querySelectorAll("input[name=mode]")) {
    input.checked = input.value === (isPtt() ? "push-to-talk" : "hands-free");
  }
  fillSettings();
  updateTalk();
}

function choose(slot, key, how) {
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
  if (!ws || ws.readyState !== WebSocket.OPEN) {
    pipeline.setRefusal(slot, "Not connected: the choice will be tried when the page reconnects.");
    Object.assign(desired, fields);
    return;
  }
  const eventId = nextId("evt_choose");
  pending[slot] = { key, eventId, how, fields };
  pipeline.setPending(slot, key);
  send(sessionUpdate(fields, eventId));
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
  setStage(ev);
  switch (ev.type) {
    case "session.created":
      onSessionCreated(ev);
      break;
    case "session.updated":
      onSession(ev.session);
      break;
    case "input_audio_buffer.speech_started":
      bargeIn("speech_started");
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
      onItem(ev.item);
      break;
    case "conversation.item.deleted":
      conversation.remove(ev.item_id);
      break;
    case "conversation.item.truncated": // ask what the server now keeps, to show it
      if (conversation.has(ev.item_id)) send({ type: "conversation.item.retrieve", item_id: ev.item_id }, { background: true });
      break;
    case "conversation.item.retrieved": {
      const part = ((ev.item && ev.item.content) || [])[0] || {};
      const kept = part.transcript ?? part.text;
      if (ev.item && ev.item.role === "assistant" && typeof kept === "string") conversation.setHeard(ev.item.id, kept);
      break;
    }
    case "response.created":
      activeResponse = ev.response.id;
      responses.set(ev.response.id, { id: ev.response.id, voice: responseVoice(ev.response), status: "in_progress", itemId: null });
      clearNotice("server-busy");
      break;
    case "response.output_item.added":
      onAnswerItem(ev.response_id, ev.item);
      break;
    case "response.output_audio_transcript.delta":
    case "response.output_text.delta":
      onAnswerItem(ev.response_id, { id: ev.item_id });
      conversation.assistantDelta(ev.item_id, ev.delta || "");
      break;
    case "r1voice.reasoning.delta":
      conversation.reasoningDelta(ev.item_id, ev.delta || "");
      break;
    case "r1voice.reasoning.done":
      conversation.reasoningDone(ev.item_id, thinkingSummary(ev), ev.cut === true);
      break;
    case "response.output_audio.delta": {
      const samples = decodeAudio(ev.delta);
      debug.audioDeltas += 1;
      debug.audioSamples += samples.length;
      if (stopped.has(ev.response_id)) break; // late audio of an interrupted answer
      schedule.enqueue(ev.item_id, audio.play(samples));
      debug.scheduled = schedule.scheduled;
      break;
    }
    case "response.output_audio.done":
      audio.endOfAudio();
      break;
    case "response.done":
      onResponseDone(ev.response);
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

function responseVoice(response) {
  const out = response && response.audio && response.audio.output;
  return (out && out.voice) || (response && response.voice) || view.voice || null;
}

function onItem(item) {
  if (!item || item.type !== "message" || item.role !== "user") return;
  const part = (item.content || [])[0] || {};
  if (part.type === "input_text") conversation.userText(item.id, part.text || "");
  else if (part.type === "input_audio" && !conversation.has(item.id)) {
    conversation.userPartial(item.id);
    if (part.transcript) conversation.userFinal(item.id, part.transcript);
  }
}

function onAnswerItem(responseId, item) {
  if (!item || !item.id || conversation.has(item.id)) return;
  const r = responses.get(responseId);
  if (r) r.itemId = item.id;
  conversation.assistantStart(item.id, r && r.voice ? `voice ${r.voice}` : "");
}

function onResponseDone(response) {
  const r = responses.get(response.id) || { id: response.id };
  const voice = responseVoice(response) || r.voice;
  Object.assign(r, { status: response.status, voice });
  responses.set(response.id, r);
  debug.responses.push({ id: response.id, status: response.status, voice, reason: response.status_details && response.status_details.reason });
  if (activeResponse === response.id) activeResponse = null;
  const reason = response.status_details && response.status_details.reason;
  for (const item of response.output || []) {
    if (item.type && item.type !== "message") continue;
    const part = (item.content || [])[0] || {};
    const heard = part.transcript ?? part.text;
    const interrupted = response.status === "cancelled" || item.status === "incomplete";
    const playedMs = schedule.playedMs(item.id);
    const meta = [voice ? `voice ${voice}` : null, interrupted ? `heard ${(playedMs / 1000).toFixed(1)} s` : null].filter(Boolean).join(" · ");
    conversation.assistantDone(item.id, { status: interrupted ? "cancelled" : response.status, heard, meta, reason });
    if (interrupted) {
      flushPlayback("cancelled");
      if (r.truncateAt !== undefined) {
        send({ type: "conversation.item.truncate", item_id: item.id, content_index: 0, audio_end_ms: r.truncateAt }, { background: true });
      }
    }
  }
  if (response.status === "failed") {
    const err = (response.status_details && response.status_details.error) || {};
    if (err.code === "server_busy") showBusy();
    else if (err.code !== "tts_failed") conversation.note(`The answer failed: ${errorMessage(err)}`, "error");
  }
}

function onMetrics(ev) {
  debug.turns.push(ev);
  const seg = turnSegments(ev);
  pipeline.setLatency(seg);
  pipeline.setTurns(debug.turns);
  const ms = (v) => (v === null || v === undefined ? "–" : Math.round(v));
  $("metrics").textContent = `end of speech → transcript ${ms(ev.speech_stopped_to_transcript_ms)} ms · first token ${ms(ev.speech_stopped_to_first_token_ms)} ms · first audio ${ms(ev.speech_stopped_to_first_audio_ms)} ms`;
}

function showBusy() {
  if ($("notices").querySelector('.notice[data-kind="server-busy"]')) return;
  notice("server-busy", errorMessage({ code: "server_busy" }), [
    {
      label: "Retry",
      run: () => {
        clearNotice("server-busy");
        send({ type: "response.create" });
      },
    },
  ]);
}

function onError(ev) {
  const err = ev.error || {};
  const eventId = err.event_id || null;
  if (eventId && backgroundIds.has(eventId)) return; // e.g. a truncate the server did itself
  // a refused drop: name it on its card, and the card shows the kept value again
  let slot = null;
  for (const [s, p] of Object.entries(pending)) if (p.eventId === eventId) slot = s;
  if (!slot) {
    const bySlot = slotOfParam(err.param);
    if (bySlot && pending[bySlot]) slot = bySlot;
  }
  if (slot) {
    pending[slot].eventIdErrored = true;
    const label = pipeline.labelOf(slot, pending[slot].key);
    pipeline.setRefusal(slot, `${label} was refused: ${errorMessage(err)}`);
    announce(`${label} was refused: ${err.message || err.code}`);
    delete pending[slot];
    if (rawSession) onSession(rawSession); // the card, the mode switch: back to what is used
    return;
  }
  if (err.code === "server_busy") return showBusy();
  if (err.code === "input_audio_buffer_commit_empty") return notice("too-short", errorMessage(err));
  if (err.code === "response_cancel_not_active") return;
  conversation.note(`${err.code || "error"}: ${errorMessage(err)}`, "error");
}

// ---- talking ----------------------------------------------------------------------------
function flushPlayback(reason) {
  const dropped = schedule.flush();
  audio.flush();
  debug.flushes.push({ reason, audioDeltas: debug.audioDeltas, played: debug.played, dropped });
  if (stages.speaking) setStage({ type: "playing", on: false });
}

/** Stop what is playing now: the server detected speech (it cancels the answer itself),
 *  or the user pressed push-to-talk (the page cancels it and truncates what was not heard). */
function bargeIn(reason) {
  const playingItem = schedule.currentItem();
  const wasPlaying = schedule.isPlaying();
  if (activeResponse) stopped.add(activeResponse);
  flushPlayback(reason);
  if (reason !== "push_to_talk") {
    // the server stopped the answer; tell it how much was really heard (what clients do)
    if (wasPlaying && playingItem) {
      send({ type: "conversation.item.truncate", item_id: playingItem, content_index: 0, audio_end_ms: schedule.playedMs(playingItem) }, { background: true });
    }
    return;
  }
  if (activeResponse) {
    const r = responses.get(activeResponse);
    if (r && r.itemId) r.truncateAt = schedule.playedMs(r.itemId);
    send({ type: "response.cancel" }, { background: true });
  } else if (wasPlaying && playingItem) {
    send({ type: "conversation.item.truncate", item_id: playingItem, content_index: 0, audio_end_ms: schedule.playedMs(playingItem) }, { background: true });
  }
}

function micFailed(err, retry) {
  const info = micErrorMessage(err);
  notice(`mic-${info.kind}`, info.message, [{ label: "Retry", run: () => { clearNotice(`mic-${info.kind}`); retry(); } }]);
  announce(info.message);
}

async function openMic() {
  try {
    await audio.openMic($("mic").value || undefined);
    for (const k of ["denied", "missing", "busy", "insecure", "other"]) clearNotice(`mic-${k}`);
    setStage({ type: "mic", on: true });
    listMics();
    return true;
  } catch (err) {
    micFailed(err, lastPress || (() => {}));
    return false;
  }
}

function stopStreaming({ commit }) {
  const tail = audio.closeMic();
  if (streaming && tail.length && ws) send({ type: "input_audio_buffer.append", audio: encodeAudio(tail) });
  if (streaming && !commit && stages.asr === "hearing" && view.turnDetection) {
    // stopped mid-sentence, hands-free: a silence lets server VAD end (and answer) the turn
    const ms = (view.turnDetection.silence_duration_ms || 500) + 300;
    send({ type: "input_audio_buffer.append", audio: encodeAudio(new Float32Array(Math.round((RATE * ms) / 1000))) });
  }
  const wasStreaming = streaming;
  streaming = false;
  setStage({ type: "mic", on: false });
  if (wasStreaming && commit) {
    if (sentSamples < RATE / 10) {
      send({ type: "input_audio_buffer.clear" });
      notice("too-short", errorMessage({ code: "input_audio_buffer_commit_empty" }));
    } else {
      send({ type: "input_audio_buffer.commit" });
      send({ type: "response.create" });
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
  bargeIn("push_to_talk");
  clearNotice("too-short");
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
  const connected = Boolean(ws && ws.readyState === WebSocket.OPEN && sessionCount);
  btn.disabled = !connected;
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
    select.replaceChildren(h("option", { value: "" }, "default"), ...mics.filter((m) => m.deviceId && m.deviceId !== "default").map((m, i) => h("option", { value: m.deviceId }, m.label || `microphone ${i + 1}`)));
    select.value = [...select.options].some((o) => o.value === chosen) ? chosen : "";
  } catch {
    /* no device list: the default microphone still works */
  }
}

// ---- audio files ------------------------------------------------------------------------
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function sendFile(file) {
  if (!file) return;
  clearNotice("file");
  if (!looksLikeAudio(file)) {
    notice("file", `“${file.name}” is not an audio file. Drop a wav, mp3, ogg, webm or flac file.`);
    return;
  }
  if (!ws || ws.readyState !== WebSocket.OPEN) {
    notice("file", "Not connected to the server: the file was not sent. Try again once connected.");
    return;
  }
  let samples;
  try {
    samples = await audio.decodeFile(file);
  } catch (err) {
    notice("file", `This browser could not decode “${file.name}” (${(err && err.message) || err}). Try a wav, mp3, ogg, webm or flac file.`);
    return;
  }
  if (fileJob) fileJob.cancelled = true;
  const job = (fileJob = { cancelled: false });
  const ptt = isPtt();
  if (ptt) bargeIn("push_to_talk");
  // hands-free: a second of silence after it ends the turn
  const total = ptt ? samples : concat(samples, new Float32Array(RATE * 1.2));
  const box = $("file-progress");
  box.hidden = false;
  box.querySelector(".name").textContent = `Sending “${file.name}” (${(samples.length / RATE).toFixed(1)} s)`;
  const bar = box.querySelector("progress");
  box.querySelector(".stop").onclick = () => (job.cancelled = true);
  const step = RATE / 50; // 20 ms
  const lead = RATE / 5; // stay at most 200 ms ahead of real time
  const start = performance.now();
  let sent = 0;
  try {
    while (sent < total.length && !job.cancelled) {
      const due = ((performance.now() - start) / 1000) * RATE + lead;
      while (sent < Math.min(due, total.length)) {
        if (!send({ type: "input_audio_buffer.append", audio: encodeAudio(total.subarray(sent, sent + step)) })) throw new Error("disconnected");
        sent += step;
      }
      bar.value = Math.min(1, sent / total.length);
      await sleep(20);
    }
    if (ptt && !job.cancelled) {
      send({ type: "input_audio_buffer.commit" });
      send({ type: "response.create" });
    }
  } catch {
    notice("file", `The connection closed while sending “${file.name}”.`);
  } finally {
    if (fileJob === job) fileJob = null;
    box.hidden = true;
  }
}

function concat(a, b) {
  const out = new Float32Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

// ---- settings, copy config --------------------------------------------------------------
function fillSettings() {
  if ($("settings").dataset.dirty === "true") return;
  $("s-instructions").value = view.instructions ?? "";
  $("s-speed").value = view.speed ?? 1;
  $("s-speed-out").textContent = String(view.speed ?? 1);
  $("s-turn").value = view.turnDetection ? view.turnDetection.type : "none";
  if (view.turnDetection && view.turnDetection.silence_duration_ms) $("s-silence").value = view.turnDetection.silence_duration_ms;
  if (view.turnDetection && view.turnDetection.eagerness) $("s-eagerness").value = view.turnDetection.eagerness;
  showTurnKnobs();
  if (typeof view.temperature === "number") $("s-temperature").value = view.temperature;
  const semantic = paletteData && paletteData.turn.find((r) => r.key === "semantic_vad");
  $("s-turn").querySelector("option[value=semantic_vad]").disabled = !(semantic && semantic.available);
}

function showTurnKnobs() {
  for (const el of $("settings").querySelectorAll("[data-for-turn]")) el.hidden = el.dataset.forTurn !== $("s-turn").value;
}

function applySettings(e) {
  e.preventDefault();
  const turn = $("s-turn").value;
  let turnDetection = null;
  if (turn === "server_vad") {
    const kept = view.turnDetection && view.turnDetection.type === "server_vad" ? view.turnDetection : {};
    turnDetection = { ...kept, type: turn, silence_duration_ms: Number($("s-silence").value) };
    delete turnDetection.eagerness;
  } else if (turn === "semantic_vad") turnDetection = { type: turn, eagerness: $("s-eagerness").value };
  const fields = {
    instructions: $("s-instructions").value,
    speed: Number($("s-speed").value),
    turnDetection,
    temperature: Number($("s-temperature").value),
  };
  Object.assign(desired, fields);
  $("settings").dataset.dirty = "false";
  const ok = send(sessionUpdate(fields));
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
  if (!ws || ws.readyState !== WebSocket.OPEN) {
    notice("connection", "Not connected: the message was not sent. It stays in the box; send it again once connected.");
    return;
  }
  $("text").value = "";
  audio.ensure(); // a user gesture: lets the answer play
  bargeIn("push_to_talk");
  send({ type: "conversation.item.create", item: { type: "message", role: "user", content: [{ type: "input_text", text }] } });
  send({ type: "response.create" });
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

pipeline.setStages(stages);
pipeline.setTurns([]);
pipeline.setPalettesLoading("loading components…");
loadComponents();
listMics();
connect();
