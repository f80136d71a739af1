// A GPT-Live session (WS /v1/live/sessions, or a WebRTC session made by POSTing its
// offer there) with the face of the page's Realtime WebSocket (readyState, send, close,
// onopen/onmessage/onclose), so the RealtimeClient and every view drive it unchanged:
// web/lib/live.js translates both ways. Over the WebSocket it sends `session.start` as
// it opens (a WebRTC session's request carried it), and it ends an answer when its audio
// and words have gone quiet (Live says no answer's end).
import { LiveTranslator } from "../lib/live.js";

const OPEN = 1;
const CLOSED = 3;
export const QUIET_MS = 3000; // no answer audio or words for this long, none playing: it is done

export class LiveSocket {
  /** url: the Live endpoint; protocols: the WebSocket subprotocols (a client secret);
   *  start(): the `session.start` event; playing(): whether an answer still plays;
   *  rtc: an RtcSocket that made the session over WebRTC (then url, protocols and start
   *  are not used). */
  constructor(url, protocols, start, playing, rtc = null) {
    this.readyState = 0;
    this.onopen = this.onmessage = this.onclose = null;
    this.onwire = null; // (dir, ev): each Live event as it goes or came over the wire
    this.translator = new LiveTranslator();
    this.playing = playing;
    this.quiet = null;
    this.ws = rtc || new WebSocket(url, protocols);
    this.ws.onopen = () => {
      this.readyState = OPEN;
      if (!rtc) this._send(start());
      if (this.onopen) this.onopen();
    };
    this.ws.onmessage = (m) => {
      let ev;
      try {
        ev = typeof m.data === "string" ? JSON.parse(m.data) : null;
      } catch {
        return;
      }
      if (!ev) return;
      if (this.onwire) this.onwire("in", ev);
      const out = this.translator.fromLive(ev, { playing: this.playing() });
      if (ev.type === "session.output_audio.delta" || ev.type === "session.output_transcript.delta") this._armQuiet();
      this._deliver(out);
    };
    this.ws.onclose = (e) => {
      this.readyState = CLOSED;
      clearTimeout(this.quiet);
      if (this.onclose) this.onclose({ code: e.code, reason: e.reason });
    };
  }

  _armQuiet() {
    clearTimeout(this.quiet);
    // a slow voice sends in bursts: an answer still playing is not over
    this.quiet = setTimeout(() => (this.playing() ? this._armQuiet() : this._deliver(this.translator.finish())), QUIET_MS);
  }

  _deliver(events) {
    for (const ev of events) if (this.onmessage) this.onmessage({ data: ev });
  }

  /** A Realtime client event (JSON): sent as Live's, or answered here (a refusal, or
   *  a session.update that changes nothing), as the server would. */
  send(text) {
    if (this.readyState !== OPEN) return;
    const result = this.translator.toLive(JSON.parse(text));
    for (const ev of result.send || []) this._send(ev);
    const reply = result.refused || result.reply;
    if (reply) setTimeout(() => this._deliver([reply]), 0); // after send() returns, as a server's would
  }

  _send(ev) {
    this.ws.send(JSON.stringify(ev));
    if (this.onwire) this.onwire("out", ev);
  }

  /** WebRTC: the microphone's track while the user talks (null: none). */
  setMic(track) {
    if (this.ws.setMic) this.ws.setMic(track);
  }

  close() {
    if (this.readyState === CLOSED) return;
    this.readyState = CLOSED;
    clearTimeout(this.quiet);
    if (this.ws.readyState === OPEN) this.ws.send(JSON.stringify({ type: "session.close" }));
    this.ws.close();
  }
}
