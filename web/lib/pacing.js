// An audio file sent as if spoken: in 20 ms chunks, never more than 200 ms ahead of real
// time, so the server's VAD and ASR take it as they would the microphone.

export class Pacer {
  constructor(total, rate) {
    this.total = total; // samples to send
    this.step = rate / 50;
    this.lead = rate / 5;
    this.rate = rate;
    this.sent = 0;
  }

  /** The [start, end) chunks due once `elapsedMs` of real time has passed (each counted
   *  as sent); the last may end past the total. */
  due(elapsedMs) {
    const until = Math.min((elapsedMs / 1000) * this.rate + this.lead, this.total);
    const chunks = [];
    while (this.sent < until) {
      chunks.push([this.sent, this.sent + this.step]);
      this.sent += this.step;
    }
    return chunks;
  }

  get done() {
    return this.sent >= this.total;
  }

  /** The share sent, 0..1. */
  get progress() {
    return Math.min(1, this.sent / this.total);
  }
}
