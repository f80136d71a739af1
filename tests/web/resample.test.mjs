import assert from "node:assert/strict";
import { test } from "node:test";

import { downmix, resample, Resampler, resampledLength } from "../../web/lib/resample.js";

const tone = (freq, rate, seconds) => Float32Array.from({ length: Math.round(rate * seconds) }, (_, i) => Math.sin((2 * Math.PI * freq * i) / rate));
const rms = (x, from = 0, to = x.length) => {
  let s = 0;
  for (let i = from; i < to; i++) s += x[i] * x[i];
  return Math.sqrt(s / (to - from));
};

test("equal rates pass samples through", () => {
  const x = tone(440, 24000, 0.1);
  assert.deepEqual(resample(x, 24000, 24000), x);
});

test("output length follows the rate ratio", () => {
  for (const [a, b] of [[48000, 24000], [44100, 24000], [24000, 48000], [24000, 44100], [16000, 24000]]) {
    const x = tone(300, a, 0.37);
    assert.equal(resample(x, a, b).length, resampledLength(x.length, a, b), `${a} -> ${b}`);
  }
});

test("a tone keeps its frequency and level (48 kHz -> 24 kHz and 44.1 -> 24)", () => {
  for (const rate of [48000, 44100]) {
    const y = resample(tone(1000, rate, 0.5), rate, 24000);
    const ref = tone(1000, 24000, 0.5);
    // compare away from the edges
    let err = 0;
    for (let i = 200; i < y.length - 200; i++) err = Math.max(err, Math.abs(y[i] - ref[i]));
    assert.ok(err < 0.02, `max error ${err} at ${rate}`);
  }
});

test("downsampling removes what is above the new Nyquist (no aliasing)", () => {
  const y = resample(tone(15000, 48000, 0.5), 48000, 24000); // 15 kHz > 12 kHz
  assert.ok(rms(y, 200, y.length - 200) < 0.02, `alias rms ${rms(y, 200, y.length - 200)}`);
});

test("upsampling 24 kHz -> 48 kHz interpolates", () => {
  const y = resample(tone(500, 24000, 0.2), 24000, 48000);
  const ref = tone(500, 48000, 0.2);
  let err = 0;
  for (let i = 200; i < y.length - 200; i++) err = Math.max(err, Math.abs(y[i] - ref[i]));
  assert.ok(err < 0.01, `max error ${err}`);
});

test("streaming in chunks gives the same samples as one shot", () => {
  const x = tone(700, 44100, 0.3);
  const whole = resample(x, 44100, 24000);
  const r = new Resampler(44100, 24000);
  const parts = [];
  for (let i = 0; i < x.length; i += 441) parts.push(r.push(x.subarray(i, i + 441)));
  parts.push(r.flush());
  const streamed = Float32Array.from(parts.flatMap((p) => [...p]));
  assert.equal(streamed.length, whole.length);
  for (let i = 0; i < whole.length; i++) assert.ok(Math.abs(streamed[i] - whole[i]) < 1e-6, `sample ${i}`);
});

test("the streaming resampler keeps bounded memory", () => {
  const r = new Resampler(48000, 24000);
  for (let i = 0; i < 500; i++) r.push(new Float32Array(960));
  assert.ok(r.buffer.length < 960 + 2 * r.radius + 4, `buffer ${r.buffer.length}`);
});

test("bad rates are refused", () => {
  assert.throws(() => new Resampler(0, 24000), RangeError);
});

test("downmix averages channels", () => {
  assert.deepEqual([...downmix([Float32Array.from([1, 0]), Float32Array.from([0, 1])])], [0.5, 0.5]);
  const mono = Float32Array.from([0.25]);
  const out = downmix([mono]);
  assert.deepEqual([...out], [0.25]);
  assert.notEqual(out, mono);
});
