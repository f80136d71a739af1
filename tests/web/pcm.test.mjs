import assert from "node:assert/strict";
import { test } from "node:test";

import { base64Size, concat, base64ToBytes, bytesToBase64, bytesToPcm16, decodeAudio, encodeAudio, floatToPcm16, level, meterValue, pcm16ToBytes, pcm16ToFloat } from "../../web/lib/pcm.js";

test("float -> PCM16 clips and rounds", () => {
  const out = floatToPcm16(Float32Array.from([0, 1, -1, 2, -2, 0.5, -0.5]));
  assert.deepEqual([...out], [0, 32767, -32768, 32767, -32768, 16384, -16384]);
});

test("PCM16 bytes are little-endian", () => {
  const bytes = pcm16ToBytes(Int16Array.from([1, -2, 0x1234]));
  assert.deepEqual([...bytes], [1, 0, 0xfe, 0xff, 0x34, 0x12]);
  assert.deepEqual([...bytesToPcm16(bytes)], [1, -2, 0x1234]);
});

test("a trailing odd byte is ignored", () => {
  assert.deepEqual([...bytesToPcm16(Uint8Array.from([1, 0, 7]))], [1]);
});

test("base64 round trip, also beyond one 32 KiB chunk", () => {
  const bytes = new Uint8Array(100_000).map((_, i) => (i * 7) & 0xff);
  const b64 = bytesToBase64(bytes);
  assert.equal(b64, Buffer.from(bytes).toString("base64"));
  assert.deepEqual(base64ToBytes(b64), bytes);
  assert.equal(base64Size(b64), bytes.length);
  assert.equal(base64Size(Buffer.from([1, 2]).toString("base64")), 2);
  assert.equal(base64Size(""), 0);
});

test("encodeAudio / decodeAudio: what the protocol carries", () => {
  const samples = Float32Array.from({ length: 480 }, (_, i) => Math.sin(i / 10) * 0.8);
  const b64 = encodeAudio(samples);
  assert.equal(base64Size(b64), 960);
  const back = decodeAudio(b64);
  assert.equal(back.length, samples.length);
  for (let i = 0; i < samples.length; i++) assert.ok(Math.abs(back[i] - samples[i]) < 1e-4);
  // matches what the server decodes: int16 little-endian
  assert.equal(Buffer.from(b64, "base64").readInt16LE(20), Math.round(Math.sin(1) * 0.8 * 32767));
});

test("PCM16 -> float in [-1, 1)", () => {
  assert.deepEqual([...pcm16ToFloat(Int16Array.from([-32768, 0, 16384]))], [-1, 0, 0.5]);
});

test("level and meter", () => {
  const { rms, peak } = level(Float32Array.from([0.5, -0.5, 0.5, -0.5]));
  assert.equal(peak, 0.5);
  assert.ok(Math.abs(rms - 0.5) < 1e-7);
  assert.deepEqual(level(new Float32Array(0)), { rms: 0, peak: 0 });
  assert.equal(meterValue(0), 0);
  assert.equal(meterValue(1), 1);
  assert.equal(meterValue(0.001), 0);
  assert.ok(Math.abs(meterValue(0.1) - 2 / 3) < 1e-9);
});

test("concat puts one run after the other", () => {
  assert.deepEqual([...concat(Float32Array.from([1, 2]), Float32Array.from([3]))], [1, 2, 3]);
  assert.deepEqual([...concat(new Float32Array(0), new Float32Array(2))], [0, 0]);
});
