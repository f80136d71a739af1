// Reconnect delays: exponential with full jitter, capped; reset once connected.
export class Backoff {
  constructor({ base = 500, cap = 15000, random = Math.random } = {}) {
    this.base = base;
    this.cap = cap;
    this.random = random;
    this.attempt = 0;
  }

  /** The delay before the next attempt (ms); each call counts an attempt. */
  next() {
    const ceiling = Math.min(this.cap, this.base * 2 ** this.attempt);
    this.attempt += 1;
    return Math.round(ceiling / 2 + (this.random() * ceiling) / 2);
  }

  reset() {
    this.attempt = 0;
  }
}
