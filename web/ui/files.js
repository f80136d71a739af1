// Audio files as questions: picked or dropped anywhere on the page, decoded by the
// browser, and sent as if spoken (paced at real time), with a progress bar and a Stop.
// In push-to-talk the page commits the file as one turn; hands-free, a silence after it
// lets server VAD end the turn.
import { looksLikeAudio } from "../lib/events.js";
import { t } from "../lib/i18n.js";
import { Pacer } from "../lib/pacing.js";
import { concat, encodeAudio, PROTOCOL_RATE } from "../lib/pcm.js";
import { $ } from "./dom.js";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export class FileSender {
  /** deps: audio (AudioEngine), client (RealtimeClient), answers (barge-in), session
   *  (push-to-talk or not), notices. */
  constructor({ audio, client, answers, session, notices }) {
    Object.assign(this, { audio, client, answers, session, notices });
    this.job = null; // {cancelled}: the file being sent
  }

  /** A file is being sent (the microphone's frames wait meanwhile). */
  get sending() {
    return this.job !== null;
  }

  async send(file) {
    if (!file) return;
    const notices = this.notices;
    notices.clear("file");
    if (!looksLikeAudio(file)) {
      notices.show("file", () => t("file.notAudio", { name: file.name }));
      return;
    }
    if (!this.client.isOpen) {
      notices.show("file", () => t("file.offline"));
      return;
    }
    let samples;
    try {
      samples = await this.audio.decodeFile(file);
    } catch (err) {
      notices.show("file", () => t("file.undecodable", { name: file.name, message: (err && err.message) || err }));
      return;
    }
    if (this.job) this.job.cancelled = true;
    const job = (this.job = { cancelled: false });
    const ptt = this.session.isPtt();
    if (ptt) this.answers.bargeIn("push_to_talk");
    const total = ptt ? samples : concat(samples, new Float32Array(PROTOCOL_RATE * 1.2));
    const box = $("file-progress");
    box.hidden = false;
    box.querySelector(".name").textContent = t("file.sending", { name: file.name, seconds: (samples.length / PROTOCOL_RATE).toFixed(1) });
    const bar = box.querySelector("progress");
    box.querySelector(".stop").onclick = () => (job.cancelled = true);
    const pacer = new Pacer(total.length, PROTOCOL_RATE);
    const start = performance.now();
    try {
      while (!pacer.done && !job.cancelled) {
        for (const [from, to] of pacer.due(performance.now() - start)) {
          if (!this.client.send({ type: "input_audio_buffer.append", audio: encodeAudio(total.subarray(from, to)) })) throw new Error("disconnected");
        }
        bar.value = pacer.progress;
        await sleep(20);
      }
      if (ptt && !job.cancelled) {
        this.client.send({ type: "input_audio_buffer.commit" });
        this.client.send({ type: "response.create" });
      }
    } catch {
      notices.show("file", () => t("file.closed", { name: file.name }));
    } finally {
      if (this.job === job) this.job = null;
      box.hidden = true;
    }
  }

  /** The file picker, and files dragged onto the page. */
  bind() {
    $("file").addEventListener("change", (e) => {
      const file = e.target.files[0];
      e.target.value = "";
      this.send(file);
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
      this.send(e.dataTransfer.files[0]);
    });
  }
}
