// Gapless playback: a FIFO of Float32 chunks played back to back; "flush" empties it
// (barge-in / cancelled response). Reports how many samples it has played (and, on a
// flush, how many it dropped).
class PlayerProcessor extends AudioWorkletProcessor {
  constructor() {
    super();
    this.queue = [];
    this.offset = 0;
    this.played = 0;
    this.port.onmessage = (e) => {
      if (e.data === "flush") {
        const dropped = this.queue.reduce((n, c) => n + c.length, 0) - this.offset;
        this.queue = []; this.offset = 0;
        this.port.postMessage({ played: this.played, dropped });
      }
      else this.queue.push(e.data);
    };
  }
  process(_inputs, outputs) {
    const out = outputs[0][0];
    let i = 0;
    while (i < out.length && this.queue.length) {
      const head = this.queue[0];
      const n = Math.min(out.length - i, head.length - this.offset);
      out.set(head.subarray(this.offset, this.offset + n), i);
      i += n; this.offset += n;
      if (this.offset >= head.length) { this.queue.shift(); this.offset = 0; }
    }
    out.fill(0, i);
    this.played += i;
    if (i && (this.played % 4800) < out.length) this.port.postMessage({ played: this.played });
    return true;
  }
}
registerProcessor("player-processor", PlayerProcessor);
