// A Realtime call over WebRTC (POST /v1/realtime/calls, OpenAI's GA protocol) with the
// WebSocket's face (readyState, send, close, onopen/onmessage/onclose with a close code),
// so the RealtimeClient drives either the same way. The events travel on the `oai-events`
// data channel; the microphone goes out on the audio transceiver's sender (set while the
// user talks, none otherwise) and the answer plays from the remote track in an <audio>
// element: the server paces it, stops it on barge-in and knows what was heard. A GPT-Live
// session (POST /v1/live/sessions) is made the same way, its config beside the offer.
import { callCloseCode } from "../lib/transport.js";

const CONNECTING = 0;
const OPEN = 1;
const CLOSED = 3;

export class RtcSocket {
  /** url: the calls endpoint; bearer: a client secret (or null); player: the <audio>;
   *  live: a GPT-Live session config (the offer then goes as Live's JSON request). */
  constructor(url, bearer, player, live = null) {
    this.readyState = CONNECTING;
    this.onopen = this.onmessage = this.onclose = null;
    this.pc = new RTCPeerConnection();
    this.sender = this.pc.addTransceiver("audio", { direction: "sendrecv" }).sender;
    this.channel = this.pc.createDataChannel("oai-events");
    this.player = player;
    this.pc.ontrack = (e) => {
      player.srcObject = e.streams[0] || new MediaStream([e.track]);
      player.play().catch(() => {}); // autoplay refused until a gesture: Talk is one
    };
    this.channel.onopen = () => {
      this.readyState = OPEN;
      if (this.onopen) this.onopen();
    };
    this.channel.onmessage = (m) => this.onmessage && this.onmessage({ data: m.data });
    this.channel.onclose = () => this._closed(1000, "");
    this.pc.onconnectionstatechange = () => {
      if (this.pc.connectionState === "failed") this._closed(4000, "");
    };
    this._offer(url, bearer, live).catch(() => this._closed(4000, ""));
  }

  async _offer(url, bearer, live) {
    await this.pc.setLocalDescription(await this.pc.createOffer());
    const sdp = this.pc.localDescription.sdp;
    const headers = { "Content-Type": live ? "application/json" : "application/sdp" };
    if (bearer) headers.Authorization = `Bearer ${bearer}`;
    const body = live ? JSON.stringify({ session: live, transport: { type: "webrtc", sdp } }) : sdp;
    const res = await fetch(url, { method: "POST", body, headers });
    if (!res.ok) {
      let reason = "";
      try {
        reason = (await res.json()).error.message;
      } catch {
        /* not an OpenAI-style error */
      }
      return this._closed(callCloseCode(res.status), reason);
    }
    if (this.readyState === CLOSED) return;
    const answer = live ? (await res.json()).transport.sdp : await res.text();
    await this.pc.setRemoteDescription({ type: "answer", sdp: answer });
  }

  send(text) {
    if (this.readyState === OPEN) this.channel.send(text);
  }

  /** The microphone's track while the user talks; null sends nothing. */
  setMic(track) {
    if (this.readyState !== CLOSED) this.sender.replaceTrack(track).catch(() => {});
  }

  close() {
    this._closed(1000, "");
  }

  _closed(code, reason) {
    if (this.readyState === CLOSED) return;
    this.readyState = CLOSED;
    this.pc.close();
    this.player.srcObject = null;
    if (this.onclose) this.onclose({ code, reason });
  }
}
