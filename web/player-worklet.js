// Gapless playback: a FIFO of Float32 chunks (at the AudioContext's rate) played back to
// back; "flush" empties it (barge-in, cancelled answer). Reports how many samples it has
// played, about every 50 ms while playing, when it runs dry, and on a flush (with how
// many it dropped).
class PlayerProcessor extends AudioWorkletProcessor {
  constructor() {
    super();
    this.queue = [];
    this.offset = 0;
    this.played = 0;
    this.sinceReport = 0;
    this.port.onmessage = (e) => {
      if (e.data === "flush") {
        const dropped = this.queue.reduce((n, c) => n + c.length, 0) - this.offset;
        this.queue = [];
        this.offset = 0;
        this.port.postMessage({ played: this.played, dropped, idle: true });
      } else this.queue.push(e.data);
    };
  }

  process(_inputs, outputs) {
    const out = outputs[0][0];
    let i = 0;
    const had = this.queue.length > 0;
    while (i < out.length && this.queue.length) {
      const head = this.queue[0];
      const n = Math.min(out.length - i, head.length - this.offset);
      out.set(head.subarray(this.offset, this.offset + n), i);
      i += n;
      this.offset += n;
      if (this.offset >= head.length) {
        this.queue.shift();
        this.offset = 0;
      }
    }
    out.fill(0, i);
    for (let c = 1; c < outputs[0].length; c++) outputs[0][c].set(out);
    this.played += i;
    this.sinceReport += i;
    const dry = had && this.queue.length === 0;
    if (dry || this.sinceReport >= sampleRate / 20) {
      this.port.postMessage({ played: this.played, idle: this.queue.length === 0 });
      this.sinceReport = 0;
    }
    return true;
  }
}
registerProcessor("player-processor", PlayerProcessor);
