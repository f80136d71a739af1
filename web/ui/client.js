// The Realtime connection: a WebRTC call where the browser can (rtc.js), else the
// WebSocket (GA dialect, with r1voice's own events); the API key asked for when the server
// wants one, reconnects with backoff, and the status line and notices that say what the
// connection is doing.
import { KEY_ITEM, KEY_SUBPROTOCOL, KeyRequired, keyWanted, realtimeProtocols } from "../lib/auth.js";
import { Backoff } from "../lib/backoff.js";
import { closeInfo, parseEvent, retryView } from "../lib/events.js";
import { t } from "../lib/i18n.js";
import { startEvent } from "../lib/live.js";
import { chooseTransport, DELEGATION_ITEM, PROTOCOL_ITEM, savedChoice, savedProtocol, TRANSPORT_ITEM } from "../lib/transport.js";
import { $, h } from "./dom.js";
import { LiveSocket } from "./livesocket.js";
import { RtcSocket } from "./rtc.js";

export class RealtimeClient {
  /** hooks: onTransport("webrtc" | "websocket") as a connection opens, onEvent(ev) for
   *  each server event, onSend(ev) for each sent one (over GPT-Live: onWire(dir, ev) for
   *  each Live event both ways instead), onClosed()
   *  when the socket closes (before the page says why), onKey() when a key was entered,
   *  liveStart() the voice and instructions a Live session starts with, playing() whether
   *  an answer still plays. */
  constructor(notices, hooks) {
    this.notices = notices;
    this.hooks = hooks;
    this.ws = null;
    this.connecting = false; // minting a client secret before the socket opens
    this.reconnectTimer = null;
    this.backoff = new Backoff();
    this.sessions = 0; // sessions started since the page loaded
    this.background = new Set(); // client events whose errors only go to the log
    this.counter = 0;
    this.status = { state: "connecting", text: () => t("status.connecting") };
    this.choice = savedChoice(localStorage); // "auto" (WebRTC where it can) or "websocket"
    this.failedWebRTC = false; // a call failed: the WebSocket from then on
    this.transport = null; // "webrtc" or "websocket": the connection open (or opening)
    Object.assign(this, savedProtocol(localStorage)); // protocol: "realtime" or "live"; Live's delegation
  }

  get isOpen() {
    return Boolean(this.ws && this.ws.readyState === 1); // OPEN, for either connection
  }

  /** A GPT-Live session (its events are translated for the page: see livesocket.js). */
  get live() {
    return this.ws instanceof LiveSocket;
  }

  /** The server plays the answers (a WebRTC call): no audio deltas, no truncate. */
  get serverPlays() {
    return this.transport === "webrtc";
  }

  /** A WebRTC call sends the microphone's `track` (null: nothing) on its media track. */
  setMic(track) {
    if (this.serverPlays && this.ws) this.ws.setMic(track);
  }

  /** Settings: "auto" or "websocket"; kept for the next visit, used from now on. */
  choose(choice) {
    this.choice = choice;
    this.failedWebRTC = false;
    this._keep(TRANSPORT_ITEM, choice);
    this._reopen();
  }

  /** Settings: "realtime" or "live", and Live's delegation ("off", "client" or a model):
   *  kept for the next visit; a new session from now on. */
  chooseProtocol(protocol, delegation = this.delegation) {
    Object.assign(this, { protocol, delegation });
    this._keep(PROTOCOL_ITEM, protocol);
    this._keep(DELEGATION_ITEM, delegation);
    this._reopen();
  }

  _keep(item, value) {
    try {
      localStorage.setItem(item, value);
    } catch {
      /* storage refused: the choice lasts for this page */
    }
  }

  _reopen() {
    const old = this.ws;
    if (old) {
      old.onclose = null;
      old.close();
      this.ws = null;
      this.hooks.onClosed();
    }
    this.connect();
  }

  /** Open, with a session started: the page can talk. */
  get connected() {
    return this.isOpen && this.sessions > 0;
  }

  nextId(prefix = "evt_page") {
    return `${prefix}_${Date.now().toString(36)}_${++this.counter}`;
  }

  /** Send a client event (false when not connected). A background event's errors are the
   *  page's own business, not the user's (see isBackground). */
  send(ev, { background = false } = {}) {
    if (!this.isOpen) return false;
    if (!ev.event_id) ev.event_id = this.nextId();
    if (background) this.background.add(ev.event_id);
    this.ws.send(JSON.stringify(ev));
    if (!this.live) this.hooks.onSend(ev);
    return true;
  }

  isBackground(eventId) {
    return Boolean(eventId) && this.background.has(eventId);
  }

  /** The status line: `text` is () => what it says (written again in another language). */
  setStatus(state, text) {
    this.status = { state, text };
    this.relabel();
  }

  relabel() {
    $("status").dataset.state = this.status.state;
    $("status").textContent = this.status.text();
  }

  async connect() {
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
    if (this.ws && this.ws.readyState <= 1) return; // connecting or open
    this.setStatus("connecting", () => t("status.connecting"));
    if (this.connecting) return;
    this.connecting = true;
    let protocols;
    try {
      protocols = await realtimeProtocols(fetch, sessionStorage);
    } catch (err) {
      if (err instanceof KeyRequired) return this._askForKey(() => t("notice.keyRefused"));
      return this._closed(4000, "");
    } finally {
      this.connecting = false;
    }
    const transport = chooseTransport(this.choice, typeof RTCPeerConnection !== "undefined", this.failedWebRTC);
    const proto = location.protocol === "https:" ? "wss" : "ws";
    let socket;
    const secret = protocols.find((p) => p.startsWith(KEY_SUBPROTOCOL));
    const bearer = secret ? secret.slice(KEY_SUBPROTOCOL.length) : null;
    if (this.protocol === "live") {
      const start = () => startEvent({ ...this.hooks.liveStart(), delegation: this.delegation, webrtc: transport === "webrtc" });
      const rtc = transport === "webrtc" ? new RtcSocket("/v1/live/sessions", bearer, $("answer-audio"), start().session) : null;
      socket = new LiveSocket(`${proto}://${location.host}/v1/live/sessions`, protocols, start, this.hooks.playing, rtc);
      socket.onwire = this.hooks.onWire;
    } else if (transport === "webrtc") {
      socket = new RtcSocket("/v1/realtime/calls?r1voice_events=1", bearer, $("answer-audio"));
    } else {
      socket = new WebSocket(`${proto}://${location.host}/v1/realtime?dialect=ga&r1voice_events=1`, protocols);
    }
    this.transport = transport;
    this.ws = socket;
    this.hooks.onTransport(transport);
    let opened = false;
    socket.onmessage = (m) => {
      const ev = parseEvent(m.data);
      if (ev) this.hooks.onEvent(ev);
    };
    socket.onopen = () => (opened = true);
    socket.onclose = async (e) => {
      if (this.ws !== socket) return;
      this.ws = null;
      let code = e.code;
      // a call that never opened (refused, or ICE failed): the WebSocket from now on
      if (transport === "webrtc" && !opened && code !== 1013 && code !== 4001) this.failedWebRTC = true;
      if (!opened && code !== 1013) code = await this._probeReadiness(code);
      this._closed(code, e.reason);
    };
  }

  /** `session.created`: the connection works. Returns whether it is a reconnect (the
   *  server starts a fresh conversation then). */
  sessionStarted() {
    this.sessions += 1;
    this.backoff.reset();
    this.notices.clear("connection");
    this.notices.clear("not-ready");
    this.setStatus("connected", () => t("status.connected"));
    return this.sessions > 1;
  }

  /** A handshake the server refused: browsers see only 1006, so ask readiness why. */
  async _probeReadiness(code) {
    try {
      const res = await fetch("/v2/health/ready", { cache: "no-store" });
      if (res.status === 503) return 1013;
      if (await keyWanted(fetch, sessionStorage)) return 4001;
    } catch {
      return 4000; // the server cannot be reached at all
    }
    return code;
  }

  _closed(code, reason) {
    this.ws = null;
    this.hooks.onClosed();
    if (code === 4001) return this._askForKey(() => t("notice.keyNeeded"));
    const info = closeInfo(code, reason);
    if (!info.retry) {
      this.setStatus("closed", () => t("status.disconnected"));
      this.notices.show("connection", () => closeInfo(code, reason).message, [{ label: () => t("notice.reconnect"), run: () => this.connect() }]);
      return;
    }
    const delay = this.backoff.next();
    const everConnected = this.sessions > 0;
    const retry = retryView(info, delay, everConnected);
    const again = () => retryView(closeInfo(code, reason), delay, everConnected); // in the page's language now
    this.setStatus(retry.state, () => again().status);
    this.notices.show(retry.notice, () => again().message, [{ label: () => t("notice.reconnectNow"), run: () => this.connect() }]);
    this.notices.clear(retry.replaces);
    this.reconnectTimer = setTimeout(() => this.connect(), delay);
  }

  /** The server wants an API key (message: () => why): ask for it (kept for this tab
   *  only), then connect. */
  _askForKey(message) {
    this.setStatus("closed", () => t("status.keyNeeded"));
    const input = h("input", { type: "password", id: "api-key", autocomplete: "off", "aria-label": t("notice.keyLabel") });
    const submit = () => {
      if (!input.value) return;
      sessionStorage.setItem(KEY_ITEM, input.value);
      this.notices.clear("api-key");
      this.hooks.onKey();
      this.connect();
    };
    input.addEventListener("keydown", (e) => e.key === "Enter" && submit());
    const el = this.notices.show("api-key", () => t("notice.keyAsk", { message: message() }), [{ label: () => t("notice.connect"), run: submit }]);
    el.querySelector(".text").after(input);
    const relabel = el.relabel;
    el.relabel = () => {
      relabel();
      input.setAttribute("aria-label", t("notice.keyLabel"));
    };
    input.focus();
  }
}
