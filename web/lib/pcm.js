// PCM16 <-> Float32 and base64, as the Realtime protocol carries audio
// (`input_audio_buffer.append.audio`, `response.output_audio.delta.delta`): 16-bit signed
// little-endian mono. Pure functions, used by the page and by the node tests.

/** The protocol's sample rate: audio on the wire (both ways) is PCM16 at 24 kHz. */
export const PROTOCOL_RATE = 24000;

/** Float32 samples in [-1, 1] -> PCM16 (clipped, rounded). */
export function floatToPcm16(samples) {
  const out = new Int16Array(samples.length);
  for (let i = 0; i < samples.length; i++) {
    const s = Math.max(-1, Math.min(1, samples[i]));
    out[i] = Math.round(s < 0 ? s * 32768 : s * 32767);
  }
  return out;
}

/** PCM16 -> Float32 in [-1, 1). */
export function pcm16ToFloat(int16) {
  const out = new Float32Array(int16.length);
  for (let i = 0; i < int16.length; i++) out[i] = int16[i] / 32768;
  return out;
}

/** Int16Array -> its little-endian bytes. */
export function pcm16ToBytes(int16) {
  const bytes = new Uint8Array(int16.length * 2);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < int16.length; i++) view.setInt16(i * 2, int16[i], true);
  return bytes;
}

/** Little-endian bytes -> Int16Array (a trailing odd byte is ignored). */
export function bytesToPcm16(bytes) {
  const n = bytes.length >> 1;
  const view = new DataView(bytes.buffer, bytes.byteOffset, n * 2);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) out[i] = view.getInt16(i * 2, true);
  return out;
}

export function bytesToBase64(bytes) {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

export function base64ToBytes(b64) {
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return bytes;
}

/** Float32 samples -> the base64 PCM16 an `input_audio_buffer.append` carries. */
export function encodeAudio(samples) {
  return bytesToBase64(pcm16ToBytes(floatToPcm16(samples)));
}

/** The base64 PCM16 of an audio delta -> Float32 samples. */
export function decodeAudio(b64) {
  return pcm16ToFloat(bytesToPcm16(base64ToBytes(b64)));
}

/** How many bytes a base64 string decodes to (without decoding it). */
export function base64Size(b64) {
  if (!b64) return 0;
  const pad = b64.endsWith("==") ? 2 : b64.endsWith("=") ? 1 : 0;
  return (b64.length / 4) * 3 - pad;
}

/** Root mean square and peak of a frame (for the input level meter). */
export function level(samples) {
  let sum = 0;
  let peak = 0;
  for (let i = 0; i < samples.length; i++) {
    const a = Math.abs(samples[i]);
    sum += a * a;
    if (a > peak) peak = a;
  }
  return { rms: samples.length ? Math.sqrt(sum / samples.length) : 0, peak };
}

/** A level (0..1 amplitude) on a dBFS meter scale: 0 at -60 dB and below, 1 at 0 dB. */
export function meterValue(amplitude, floorDb = -60) {
  if (amplitude <= 0) return 0;
  const db = 20 * Math.log10(amplitude);
  return Math.max(0, Math.min(1, (db - floorDb) / -floorDb));
}

/** Two runs of samples, one after the other. */
export function concat(a, b) {
  const out = new Float32Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
