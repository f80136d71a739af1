// Talking: the Talk button (hands-free, a toggle; push-to-talk, held down, or the space
// bar held), the microphone with its picker and level meter, and what goes to the server while the user
// talks: the audio, then at the end of a push-to-talk turn the commit and the request
// for an answer (or a clear, when the press was too short to hear).
import { micOptions } from "../lib/devices.js";
import { errorMessage, micErrorMessage } from "../lib/events.js";
import { t } from "../lib/i18n.js";
import { SpeechGate } from "../lib/live.js";
import { encodeAudio, meterValue, PROTOCOL_RATE } from "../lib/pcm.js";
import { $, announce, h } from "./dom.js";

const MIC_ERRORS = ["denied", "missing", "busy", "insecure", "other"];
// Where the space bar types or presses something else, it does not talk.
const TYPING = "input:not([type=radio]):not([type=checkbox]):not([type=range]), textarea, select, [contenteditable], button:not(#talk), a, summary";

export class Talk {
  /** deps: audio (AudioEngine), client (RealtimeClient), answers (barge-in), session
   *  (push-to-talk or not, its turn detection), notices, stages (StageTracker), debug
   *  (window.r1voice.streaming). */
  constructor({ audio, client, answers, session, notices, stages, debug }) {
    Object.assign(this, { audio, client, answers, session, notices, stages, debug });
    this.button = $("talk");
    this.streaming = false; // microphone frames go to the server
    this.sentSamples = 0; // since the current push-to-talk press
    this.held = false; // push-to-talk is pressed
    this.lastPress = null; // what a Retry after a microphone error does again
    this.gate = new SpeechGate(); // GPT-Live: speech over the answer stops it here at once
  }

  /** A frame from the microphone (24 kHz). */
  frame(samples) {
    if (!this.streaming) return;
    // a WebRTC call carries the microphone on its own track (see _stream)
    if (!this.client.serverPlays) this.client.send({ type: "input_audio_buffer.append", audio: encodeAudio(samples) });
    this.sentSamples += samples.length;
    if (this.client.protocol === "live" && this.gate.push(samples, this.answers.schedule.isPlaying())) this.answers.bargeIn("speech_started");
  }

  /** The microphone's level ({peak} of a frame) on the meter. */
  showLevel({ peak }) {
    $("level").value = meterValue(peak);
  }

  async toggleHandsFree() {
    this.lastPress = () => this.toggleHandsFree();
    if (this.streaming || this.audio.micOpen) return this.stop({ commit: false });
    await this.audio.ensure();
    if (!(await this._openMic())) return;
    this._stream(true);
    this.sentSamples = 0;
    this.update();
  }

  async press() {
    if (this.held) return;
    this.held = true;
    this.lastPress = () => this.press();
    await this.audio.ensure();
    this.answers.bargeIn("push_to_talk");
    this.notices.clear("too-short");
    this.sentSamples = 0;
    this.update();
    if (!(await this._openMic())) {
      this.held = false;
      this.update();
      return;
    }
    this._stream(true);
    if (!this.held) this.stop({ commit: true }); // released while the microphone opened
    this.update();
  }

  release() {
    if (!this.held) return;
    this.held = false;
    if (this.streaming) this.stop({ commit: true });
    this.update();
  }

  /** Close the microphone; commit: end a push-to-talk turn (or clear one too short). */
  stop({ commit }) {
    this.client.setMic(null);
    const tail = this.audio.closeMic();
    if (this.streaming && tail.length && !this.client.serverPlays) this.client.send({ type: "input_audio_buffer.append", audio: encodeAudio(tail) });
    const turn = this.session.view.turnDetection;
    if (this.streaming && !commit && this.stages.state.asr === "hearing" && turn) {
      // stopped mid-sentence, hands-free: a silence lets server VAD end (and answer) the turn
      const ms = (turn.silence_duration_ms || 500) + 300;
      this.client.send({ type: "input_audio_buffer.append", audio: encodeAudio(new Float32Array(Math.round((PROTOCOL_RATE * ms) / 1000))) });
    }
    const wasStreaming = this.streaming;
    this._stream(false);
    this.stages.update({ type: "mic", on: false });
    if (wasStreaming && commit) {
      if (this.sentSamples < PROTOCOL_RATE / 10) {
        this.client.send({ type: "input_audio_buffer.clear" });
        this.notices.show("too-short", () => errorMessage({ code: "input_audio_buffer_commit_empty" }));
      } else {
        this.client.send({ type: "input_audio_buffer.commit" });
        this.client.send({ type: "response.create" });
      }
    }
    this.update();
  }

  /** The Talk button as the mode, the connection and the microphone are now. */
  update() {
    const btn = this.button;
    const ptt = this.session.isPtt();
    btn.disabled = !this.client.connected;
    if (ptt) {
      btn.textContent = t(this.held ? "talk.release" : "talk.hold");
      btn.setAttribute("aria-pressed", String(this.held));
    } else {
      btn.textContent = t(this.streaming ? "talk.stop" : "talk.talk");
      btn.setAttribute("aria-pressed", String(this.streaming));
    }
    btn.dataset.mode = ptt ? "push-to-talk" : "hands-free";
    this.debug.streaming = this.streaming;
  }

  async listMics() {
    try {
      const mics = await this.audio.listMics();
      const select = $("mic");
      const chosen = select.value;
      select.replaceChildren(h("option", { value: "" }, t("talk.defaultMic")), ...micOptions(mics).map((m) => h("option", { value: m.value }, m.label)));
      select.value = [...select.options].some((o) => o.value === chosen) ? chosen : "";
    } catch {
      /* no device list: the default microphone still works */
    }
  }

  /** The button, the space bar, the microphone picker. */
  bind() {
    const talk = this.button;
    const ptt = () => this.session.isPtt();
    talk.addEventListener("click", (e) => {
      if (!ptt()) this.toggleHandsFree();
      else if (e.detail === 0) {
        // the keyboard (Enter) toggles; a pointer presses and releases by itself
        if (this.held) this.release();
        else this.press();
      }
    });
    talk.addEventListener("pointerdown", (e) => {
      if (!ptt() || e.button !== 0) return;
      talk.setPointerCapture?.(e.pointerId);
      this.press();
    });
    for (const type of ["pointerup", "pointercancel", "lostpointercapture"]) {
      talk.addEventListener(type, () => ptt() && this.release());
    }
    document.addEventListener("keydown", (e) => {
      if (e.code !== "Space" || e.target.closest?.(TYPING) || e.ctrlKey || e.metaKey || e.altKey) return;
      e.preventDefault();
      if (e.repeat || talk.disabled) return;
      if (ptt()) this.press();
      else this.toggleHandsFree();
    });
    document.addEventListener("keyup", (e) => {
      if (e.code !== "Space" || e.target.closest?.(TYPING)) return;
      e.preventDefault();
      if (ptt()) this.release();
    });
    window.addEventListener("blur", () => ptt() && this.release());
    $("mic").addEventListener("change", async () => {
      if (!this.audio.micOpen) return;
      const wasStreaming = this.streaming;
      this.audio.closeMic();
      if (await this._openMic()) this._stream(wasStreaming);
    });
    navigator.mediaDevices?.addEventListener?.("devicechange", () => this.listMics());
  }

  /** Whether the microphone goes to the server (a WebRTC call: its track, set or unset). */
  _stream(on) {
    // GPT-Live: the session hears the microphone muted while Talk is off
    if (this.client.protocol === "live" && on !== this.streaming) this.client.send({ type: on ? "session.input_audio.unmute" : "session.input_audio.mute" });
    this.streaming = on;
    this.client.setMic(on ? this.audio.micTrack : null);
  }

  async _openMic() {
    try {
      await this.audio.openMic($("mic").value || undefined);
      for (const kind of MIC_ERRORS) this.notices.clear(`mic-${kind}`);
      this.stages.update({ type: "mic", on: true });
      this.listMics();
      return true;
    } catch (err) {
      this._micFailed(err, this.lastPress || (() => {}));
      return false;
    }
  }

  _micFailed(err, retry) {
    const info = micErrorMessage(err);
    const kind = `mic-${info.kind}`;
    const again = () => {
      this.notices.clear(kind);
      retry();
    };
    this.notices.show(kind, () => micErrorMessage(err).message, [{ label: () => t("notice.retry"), run: again }]);
    announce(info.message);
  }
}
