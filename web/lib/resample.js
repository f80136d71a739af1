// Sample-rate conversion in the browser: the microphone and decoded files come at the
// AudioContext's rate (44.1/48 kHz, whatever the device has), the protocol wants 24 kHz;
// answer audio comes at 24 kHz and plays at the context's rate. A streaming windowed-sinc
// resampler (low-pass at the lower Nyquist, so downsampling does not alias), exact for
// equal rates. Pure code: no Web Audio, so Firefox and Safari (whose contexts cannot be
// forced to 24 kHz with a microphone attached) behave the same as Chromium.

const HALF_TAPS = 12; // zero crossings on each side of the kernel centre

function sinc(x) {
  if (x === 0) return 1;
  const px = Math.PI * x;
  return Math.sin(px) / px;
}

// Blackman window over [-1, 1].
function blackman(t) {
  if (t <= -1 || t >= 1) return 0;
  const u = (t + 1) / 2;
  return 0.42 - 0.5 * Math.cos(2 * Math.PI * u) + 0.08 * Math.cos(4 * Math.PI * u);
}

export class Resampler {
  /** @param {number} inRate @param {number} outRate */
  constructor(inRate, outRate, halfTaps = HALF_TAPS) {
    if (!(inRate > 0 && outRate > 0)) throw new RangeError("sample rates must be positive");
    this.inRate = inRate;
    this.outRate = outRate;
    this.step = inRate / outRate; // input samples per output sample
    this.cutoff = Math.min(1, outRate / inRate); // relative to the input Nyquist
    this.radius = Math.ceil(halfTaps / this.cutoff); // kernel half-width in input samples
    this.halfTaps = halfTaps;
    this.buffer = new Float32Array(0); // input not yet fully used (with history)
    this.base = 0; // absolute input index of buffer[0]
    this.count = 0; // output samples produced
    this.pos = 0; // absolute input position of the next output sample (count * step, exactly)
    this.consumed = 0; // absolute input samples received
  }

  _kernel(d) {
    const c = this.cutoff;
    return c * sinc(c * d) * blackman(d / this.radius);
  }

  _value(x) {
    const lo = Math.ceil(x - this.radius);
    const hi = Math.floor(x + this.radius);
    let acc = 0;
    let norm = 0;
    for (let k = lo; k <= hi; k++) {
      const idx = k - this.base;
      const w = this._kernel(x - k);
      norm += w;
      if (idx >= 0 && idx < this.buffer.length) acc += this.buffer[idx] * w;
    }
    return norm ? acc / norm : 0;
  }

  /** Feed input samples; returns the output samples now computable. */
  push(input) {
    if (this.inRate === this.outRate) {
      this.consumed += input.length;
      return Float32Array.from(input);
    }
    const merged = new Float32Array(this.buffer.length + input.length);
    merged.set(this.buffer);
    merged.set(input, this.buffer.length);
    this.buffer = merged;
    this.consumed += input.length;
    return this._drain(this.consumed - 1 - this.radius);
  }

  /** The tail still held back (the kernel's look-ahead), padded with silence. */
  flush() {
    if (this.inRate === this.outRate) return new Float32Array(0);
    return this._drain(this.consumed - 1e-9);
  }

  _drain(limit) {
    const out = [];
    while (this.pos <= limit) {
      out.push(this._value(this.pos));
      this.count += 1;
      this.pos = (this.count * this.inRate) / this.outRate;
    }
    // keep what later outputs still need
    const keepFrom = Math.max(this.base, Math.floor(this.pos - this.radius) - 1);
    if (keepFrom > this.base) {
      this.buffer = this.buffer.slice(keepFrom - this.base);
      this.base = keepFrom;
    }
    return Float32Array.from(out);
  }
}

/** One-shot conversion of a whole signal. */
export function resample(samples, inRate, outRate) {
  const r = new Resampler(inRate, outRate);
  const head = r.push(samples);
  const tail = r.flush();
  const out = new Float32Array(head.length + tail.length);
  out.set(head);
  out.set(tail, head.length);
  return out;
}

/** The number of output samples a whole signal of `n` input samples gives. */
export function resampledLength(n, inRate, outRate) {
  return Math.ceil((n * outRate) / inRate);
}

/** Average channels (arrays of Float32Array) into one. */
export function downmix(channels) {
  if (channels.length === 1) return Float32Array.from(channels[0]);
  const n = channels[0].length;
  const out = new Float32Array(n);
  for (const ch of channels) for (let i = 0; i < n; i++) out[i] += ch[i];
  for (let i = 0; i < n; i++) out[i] /= channels.length;
  return out;
}
