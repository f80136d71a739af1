// The r1voice page: the ASR -> LLM -> TTS pipeline on screen, swappable by drag and drop,
// and a voice conversation over Realtime (GA dialect): a WebRTC call where the browser can,
// else the WebSocket; or over GPT-Live (a setting; ui/livesocket.js). Plain ES modules:
// web/lib/ holds the logic (no DOM), web/ui/ the views; this file builds them, routes the
// server's events to them, and starts the page in its language (English or Simplified
// Chinese: the user's saved choice, else the browser's).
//
// `window.r1voice` holds debug state for tests and the console: counts of server events by
// type, answer audio received / scheduled / played (24 kHz samples), flushes, turn
// metrics, responses (with the voice they used), the session as the server confirmed it.
import { metricsLine, turnSegments } from "./lib/chart.js";
import { chineseDefaults } from "./lib/components.js";
import { delegationNote, errorMessage, thinkingSummary } from "./lib/events.js";
import { getLanguage, pickLanguage, SAVED_ITEM, setLanguage, t } from "./lib/i18n.js";
import { keptText, userMessage } from "./lib/items.js";
import { StageTracker } from "./lib/stages.js";
import { Answers } from "./ui/answers.js";
import { AudioEngine } from "./ui/audio.js";
import { RealtimeClient } from "./ui/client.js";
import { Conversation } from "./ui/conversation.js";
import { $, translatePage } from "./ui/dom.js";
import { EventLog } from "./ui/eventlog.js";
import { FileSender } from "./ui/files.js";
import { MessageBox } from "./ui/message.js";
import { Notices } from "./ui/notices.js";
import { PipelineView } from "./ui/pipeline.js";
import { SessionConfig } from "./ui/session.js";
import { SettingsDrawer } from "./ui/settings.js";
import { Talk } from "./ui/talk.js";
import { TimelineView } from "./ui/timeline.js";

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
  language: "en", // the page's
  transport: null, // "webrtc" or "websocket": the connection in use
  delegations: [], // GPT-Live's, as they changed
});

// The views call each other only through the hooks and objects given here; a hook may
// name a view built after it, as none runs before the page starts at the bottom.
const notices = new Notices($("notices"), { onShow: (kind, message) => debug.notices.push({ kind, message }) });
const conversation = new Conversation($("log"));
const eventLog = new EventLog({ list: $("devlog-list"), filter: $("devlog-filter"), clear: $("devlog-clear"), count: $("devlog-count") });
const pipeline = new PipelineView({ onChoose: (slot, key) => session.choose(slot, key) });
const stages = new StageTracker((state) => pipeline.setStages(state));
const audio = new AudioEngine({
  onFrame: (samples) => {
    if (!files.sending) talk.frame(samples); // a file being sent has the input to itself
  },
  onLevel: (level) => talk.showLevel(level),
  onPlayed: (played, idle) => answers.played(played, idle),
});
const client = new RealtimeClient(notices, {
  onEvent,
  onSend: (ev) => eventLog.add("out", ev),
  onWire: (dir, ev) => eventLog.add(dir, ev), // GPT-Live's own events, as they were sent
  onClosed: () => {
    talk.stop({ commit: false });
    answers.reset();
    stages.reset();
    talk.update();
  },
  onKey: () => session.forgetPalettes(),
  onTransport: (transport) => {
    debug.transport = transport;
    settings.showTransport(transport);
  },
  liveStart: () => session.choices.wanted() || {}, // GPT-Live fixes them at session.start
  playing: () => answers.schedule.isPlaying() || answers.responses.isStopped(answers.responses.active), // stopped: by the user's speech
});
const session = new SessionConfig({
  client,
  pipeline,
  debug,
  onChange: () => {
    settings.fill();
    if (debug.transport) settings.showTransport(debug.transport); // the LLMs Live may delegate to
    talk.update();
  },
});
const answers = new Answers({ audio, client, conversation, notices, stages, debug, sessionVoice: () => session.view.voice });
const talk = new Talk({ audio, client, answers, session, notices, stages, debug });
const files = new FileSender({ audio, client, answers, session, notices });
const settings = new SettingsDrawer({ session, client, debug, onLanguage: chooseLanguage });
const message = new MessageBox({ client, audio, answers, notices });
const timeline = new TimelineView();

function onEvent(ev) {
  debug.events[ev.type] = (debug.events[ev.type] || 0) + 1;
  if (ev.wireType) debug.events[ev.wireType] = (debug.events[ev.wireType] || 0) + 1;
  if (!client.live) eventLog.add("in", ev);
  stages.update(ev);
  switch (ev.type) {
    case "session.created":
      if (client.sessionStarted()) conversation.divider(t("log.reconnected"));
      debug.sessions = client.sessions;
      session.created(ev.session);
      timeline.current(ev.session.id);
      talk.update();
      break;
    case "session.updated":
      session.show(ev.session);
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
      if ("language" in ev) pipeline.setHeard(ev.language ?? null);
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
    case "r1voice.reasoning.done":
      conversation.reasoningDone(ev.item_id, thinkingSummary(ev), ev.cut === true);
      break;
    case "response.output_audio.delta":
      answers.audioDelta(ev);
      break;
    case "response.output_audio.done":
      answers.audioDone();
      break;
    case "output_audio_buffer.started": // a WebRTC call: the server's track plays it
    case "output_audio_buffer.stopped":
    case "output_audio_buffer.cleared":
      answers.serverAudio(ev);
      break;
    case "response.done":
      answers.done(ev.response);
      break;
    case "r1voice.interruption": // speech over the answer: a backchannel or no words let it go on
      answers.decided(ev.item_id, ev.verdict);
      break;
    case "input_audio_buffer.timeout_triggered": // an idle nudge: the silence is the user's turn
      conversation.userSilent(ev.item_id, (ev.audio_end_ms || 0) - (ev.audio_start_ms || 0));
      break;
    case "r1voice.turn.metrics":
      showMetrics(ev);
      break;
    case "live.delegation": // GPT-Live: a delegation was created, got thinking or commentary, or is done
      debug.delegations.push({ change: ev.change, ...ev.delegation });
      conversation.note(delegationNote(ev), "delegation");
      timeline.delegation(ev.delegation);
      break;
    case "error":
      onError(ev.error || {});
      break;
    default:
      break;
  }
}

function showMetrics(ev) {
  debug.turns.push(ev);
  pipeline.setLatency(turnSegments(ev));
  pipeline.setTurns(debug.turns);
  $("metrics").textContent = metricsLine(ev);
}

/** Show the page in `lang` ("en" or "zh-CN"): every text written again, nothing else
 *  touched (the connection, the conversation and the session stay as they are). */
function showLanguage(lang) {
  debug.language = setLanguage(lang);
  document.documentElement.lang = debug.language;
  translatePage();
  client.relabel();
  notices.relabel();
  pipeline.relabel();
  settings.relabel();
  talk.update();
  talk.listMics();
  if (debug.turns.length) $("metrics").textContent = metricsLine(debug.turns.at(-1));
}

/** The user picked the page's language in Settings: kept for the next visit. */
function chooseLanguage(lang) {
  try {
    localStorage.setItem(SAVED_ITEM, lang);
  } catch {
    /* storage refused (private mode): the choice lasts for this page */
  }
  showLanguage(lang);
}

function savedLanguage() {
  try {
    return localStorage.getItem(SAVED_ITEM);
  } catch {
    return null;
  }
}

function onError(err) {
  if (client.isBackground(err.event_id)) return; // e.g. a truncate the server did itself
  if (session.refused(err)) return; // a refused drop: its card says so
  if (err.code === "server_busy") return answers.busy();
  if (err.code === "input_audio_buffer_commit_empty") return notices.show("too-short", errorMessage(err));
  if (err.code === "response_cancel_not_active") return;
  if (err.code === "unsupported_language") session.forget("transcriptionLanguage"); // not asked for again on the next session
  if (err.code === "unsupported_language" || settings.sent(err.event_id)) settings.refused(() => errorMessage(err));
  conversation.note(`${err.code || "error"}: ${errorMessage(err)}`, "error");
}

for (const input of document.querySelectorAll("input[name=mode]")) {
  input.addEventListener("change", () => {
    if (talk.streaming) talk.stop({ commit: false });
    session.choose("turn", input.value === "push-to-talk" ? "none" : session.handsFreeTurn);
  });
}
talk.bind();
files.bind();
settings.bind();
message.bind();
timeline.bind();

showLanguage(pickLanguage(navigator.languages || [navigator.language], savedLanguage()));
// opened in Chinese: ask for a pipeline that hears and answers Chinese (see chineseDefaults)
if (getLanguage() === "zh-CN") session.wantDefaults(chineseDefaults);
pipeline.setStages(stages.state);
pipeline.setTurns([]);
pipeline.setPalettesLoading(() => t("palette.loading"));
session.load();
talk.listMics();
client.connect();
