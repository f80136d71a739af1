// The page's audio: one AudioContext at the device's own rate (so it works in every
// browser), the microphone through an AudioWorklet (echo cancellation on), resampled to
// the protocol's 24 kHz; answer audio resampled to the context rate and played gaplessly
// by another worklet; audio files decoded by the browser.
import { downmix, Resampler } from "../lib/resample.js";
import { level, PROTOCOL_RATE } from "../lib/pcm.js";

export class AudioEngine {
  /** hooks: onFrame(float24k), onLevel({rms, peak}), onPlayed(samples24k, idle) */
  constructor(hooks) {
    this.hooks = hooks;
    this.ctx = null;
    this.player = null;
    this.mic = null; // {stream, source, node, resampler, deviceId}
    this.playResampler = null;
  }

  async ensure() {
    if (!this.ctx) {
      const ctx = new AudioContext();
      await ctx.audioWorklet.addModule("/web/capture-worklet.js");
      await ctx.audioWorklet.addModule("/web/player-worklet.js");
      const player = new AudioWorkletNode(ctx, "player-processor", { outputChannelCount: [1] });
      player.connect(ctx.destination);
      player.port.onmessage = (e) => {
        const played24 = Math.round((e.data.played * PROTOCOL_RATE) / ctx.sampleRate);
        this.hooks.onPlayed(played24, Boolean(e.data.idle), e.data.dropped || 0);
      };
      this.ctx = ctx;
      this.player = player;
      this.playResampler = new Resampler(PROTOCOL_RATE, ctx.sampleRate);
    }
    if (this.ctx.state !== "running") await this.ctx.resume().catch(() => {});
    return this.ctx;
  }

  get micOpen() {
    return this.mic !== null;
  }

  /** The open microphone's track (a WebRTC call sends it as it is), or null. */
  get micTrack() {
    return this.mic ? this.mic.stream.getAudioTracks()[0] || null : null;
  }

  /** Open the microphone (rejects with the browser's error: NotAllowedError, ...). */
  async openMic(deviceId) {
    if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) {
      throw Object.assign(new Error("no mediaDevices"), { name: "NoMediaDevices" });
    }
    await this.ensure();
    if (this.mic) return;
    const audio = { channelCount: 1, echoCancellation: true, noiseSuppression: true, autoGainControl: true };
    if (deviceId) audio.deviceId = { exact: deviceId };
    const stream = await navigator.mediaDevices.getUserMedia({ audio });
    const source = this.ctx.createMediaStreamSource(stream);
    const node = new AudioWorkletNode(this.ctx, "capture-processor");
    const resampler = new Resampler(this.ctx.sampleRate, PROTOCOL_RATE);
    node.port.onmessage = (e) => {
      this.hooks.onLevel(level(e.data));
      const out = resampler.push(e.data);
      if (out.length) this.hooks.onFrame(out);
    };
    source.connect(node);
    this.mic = { stream, source, node, resampler, deviceId };
  }

  /** Close the microphone; returns the resampler's last samples (to send, if streaming). */
  closeMic() {
    if (!this.mic) return new Float32Array(0);
    const { stream, source, node, resampler } = this.mic;
    node.port.onmessage = null;
    source.disconnect();
    node.disconnect();
    for (const t of stream.getTracks()) t.stop();
    this.mic = null;
    this.hooks.onLevel({ rms: 0, peak: 0 });
    return resampler.flush();
  }

  async listMics() {
    if (!navigator.mediaDevices || !navigator.mediaDevices.enumerateDevices) return [];
    const devices = await navigator.mediaDevices.enumerateDevices();
    return devices.filter((d) => d.kind === "audioinput");
  }

  /** Queue answer audio (24 kHz); returns how many 24 kHz samples were queued. */
  play(samples24k) {
    if (!this.player) return 0;
    const out = this.playResampler.push(samples24k);
    if (out.length) this.player.port.postMessage(out, [out.buffer]);
    return samples24k.length;
  }

  /** The end of one answer's audio: play the resampler's tail too. */
  endOfAudio() {
    if (!this.player) return;
    const tail = this.playResampler.flush();
    if (tail.length) this.player.port.postMessage(tail, [tail.buffer]);
    this.playResampler = new Resampler(PROTOCOL_RATE, this.ctx.sampleRate);
  }

  /** Stop playback now (barge-in). */
  flush() {
    if (!this.player) return;
    this.player.port.postMessage("flush");
    this.playResampler = new Resampler(PROTOCOL_RATE, this.ctx.sampleRate);
  }

  /** A file -> mono Float32 at 24 kHz (rejects when the browser cannot decode it). */
  async decodeFile(file) {
    await this.ensure();
    const decoded = await this.ctx.decodeAudioData(await file.arrayBuffer());
    const channels = [];
    for (let c = 0; c < decoded.numberOfChannels; c++) channels.push(decoded.getChannelData(c));
    const mono = downmix(channels);
    const r = new Resampler(decoded.sampleRate, PROTOCOL_RATE);
    const head = r.push(mono);
    const tail = r.flush();
    const out = new Float32Array(head.length + tail.length);
    out.set(head);
    out.set(tail, head.length);
    return out;
  }
}
