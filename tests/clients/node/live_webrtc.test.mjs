// The `openai` npm package's GPT-Live WebRTC client (OpenAILiveWebRTC, openai/live/webrtc)
// under Node against a real r1voice server, the SDK unmodified. Driven by
// tests/clients/test_node_live.py, which starts the server (a scripted LLM, real VAD, ASR
// and TTS) and passes R1VOICE_BASE_URL, R1VOICE_EVENTS_OUT, R1VOICE_SPEECH_PCM (PCM16 mono
// at 24 kHz) and R1VOICE_API_KEY as for live.test.mjs.
//
// What the SDK does and what Node lacks: OpenAILiveWebRTC is browser code. It builds its
// peer from globalThis.RTCPeerConnection (absent in Node), opens the `oai-events` data
// channel, makes the offer, hands it to an application-owned `exchangeSdp` callback and
// types the data channel's events; it never touches media. So the polyfill is exactly
// two things from @roamhq/wrtc (libwebrtc, prebuilt in its npm package): the global
// RTCPeerConnection, and the microphone and speaker a browser would have (wrtc's
// nonstandard RTCAudioSource feeding a track, RTCAudioSink reading the remote one). The
// SDP exchange is the SDK's own `client.live.create()`.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { after, test } from 'node:test';

import wrtc from '@roamhq/wrtc';
import OpenAI from 'openai';
import { OpenAILiveWebRTC } from 'openai/live/webrtc';

globalThis.RTCPeerConnection ??= wrtc.RTCPeerConnection; // the one polyfilled global
const { RTCAudioSink, RTCAudioSource } = wrtc.nonstandard;

const BASE_URL = process.env.R1VOICE_BASE_URL;
const skip = BASE_URL ? false : 'R1VOICE_BASE_URL is not set (run by tests/clients/test_node_live.py)';
const TIMEOUT_MS = Number(process.env.R1VOICE_TIMEOUT_MS ?? 240_000);
const API_KEY = process.env.R1VOICE_API_KEY || 'sk-test';
const RATE = 24_000; // R1VOICE_SPEECH_PCM's rate
const FRAME = RATE / 100; // RTCAudioSource takes 10 ms frames
const AUDIBLE_RMS = 100; // PCM16 units: above Opus's noise floor on silence
// What ASR may make of jfk.flac's first phrase ("And so, my fellow Americans"): any one
// of its words, near misses included, shows the microphone was heard.
const HEARD = /\b(fell\w*|americ\w*|my|so)\b/i;
const received = []; // every server event, as the SDK delivered it
const sdkErrors = []; // every error the SDK reported on its connection events

after(() => {
  if (process.env.R1VOICE_EVENTS_OUT) {
    writeFileSync(process.env.R1VOICE_EVENTS_OUT, JSON.stringify({ received, sdkErrors }));
  }
  // wrtc's native objects crash Node's environment teardown after an RTCAudioSource has
  // been used (SIGSEGV past the 'exit' event: node-webrtc issue 636, still in 0.10.0),
  // which the runner counts as a failed file. The results are reported by then (in
  // 'beforeExit'), so leave with their exit code before the teardown.
  process.once('exit', (code) => process.exit(code));
});

/** A microphone: from start() on, `pcm` (PCM16 mono at RATE) at real time, then silence
 * until stop(). */
function microphone(pcm) {
  const source = new RTCAudioSource();
  const track = source.createTrack();
  const samples = new Int16Array(Uint8Array.from(pcm).buffer); // aligned for Int16Array
  let began = 0;
  let sent = 0; // frames
  let timer;
  const pump = () => {
    // 40 ms ahead of the clock, as a capture device's buffer would be
    while (sent * 10 < Date.now() - began + 40) {
      const frame = new Int16Array(FRAME);
      frame.set(samples.subarray(sent * FRAME, (sent + 1) * FRAME));
      source.onData({
        samples: frame,
        sampleRate: RATE,
        bitsPerSample: 16,
        channelCount: 1,
        numberOfFrames: FRAME,
      });
      sent += 1;
    }
  };
  return {
    track,
    start: () => {
      began = Date.now();
      timer = setInterval(pump, 10);
    },
    stop: () => {
      clearInterval(timer);
      track.stop();
    },
  };
}

/** The remote audio track as a speaker would play it: counts audible 10 ms frames. */
function speaker(peer) {
  const heard = { audible: 0, sink: null };
  peer.addEventListener('track', ({ track }) => {
    if (track.kind !== 'audio' || heard.sink) return;
    heard.sink = new RTCAudioSink(track);
    heard.sink.ondata = ({ samples }) => {
      let sum = 0;
      for (const s of samples) sum += s * s;
      if (Math.sqrt(sum / samples.length) > AUDIBLE_RMS) heard.audible += 1;
    };
  });
  return heard;
}

const waiting = new Set(); // serverEvent()'s pending matchers
function deliver(event) {
  received.push(event);
  for (const waiter of waiting) if (waiter(event)) waiting.delete(waiter);
}

/** The first server event of `type` (matching `match`), received already or later. */
function serverEvent(type, match = () => true) {
  const earlier = received.find((e) => e.type === type && match(e));
  if (earlier) return Promise.resolve(earlier);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${type} in time`)), TIMEOUT_MS);
    waiting.add((event) => {
      if (event.type !== type || !match(event)) return false;
      clearTimeout(timer);
      resolve(event);
      return true;
    });
  });
}
const text = (type) =>
  received
    .filter((e) => e.type === type)
    .map((e) => e.delta)
    .join('');

test('webrtc audio turn', { skip, timeout: TIMEOUT_MS }, async () => {
  const client = new OpenAI({ apiKey: API_KEY, baseURL: BASE_URL });
  const live = new OpenAILiveWebRTC();
  const mic = microphone(readFileSync(process.env.R1VOICE_SPEECH_PCM));
  live.peerConnection.addTrack(mic.track); // before the offer: it must carry audio
  const heard = speaker(live.peerConnection);
  live.onEvent(deliver);
  live.onConnectionEvent((event) => {
    if (event.type === 'error') sdkErrors.push(`${event.error.code}: ${event.error.message}`);
  });
  let sessionId;
  try {
    await live.connect({
      timeoutMs: 60_000,
      exchangeSdp: async (offer, { signal }) => {
        const created = await client.live.create(
          { session: { model: 'gpt-live-1' }, transport: { type: 'webrtc', sdp: offer } },
          { signal },
        );
        sessionId = created.session.id;
        return created.transport.sdp;
      },
    });
    assert.equal(live.state, 'connected');
    const started = await serverEvent('session.started');
    assert.equal(started.session.id, sessionId);
    assert.equal(started.session.model, 'gpt-live-1');
    mic.start(); // the user speaks once the call is up
    // the microphone's words, transcribed, then the scripted answer on both paths
    const heardWords = () => HEARD.test(text('session.input_transcript.delta'));
    await serverEvent('session.input_transcript.delta', heardWords);
    await serverEvent('session.output_transcript.delta', (e) => e.delta.includes('Paris'));
    await until(() => heard.audible >= 10, 'no audible answer on the remote track');
    const closed = serverEvent('session.closed');
    live.send({ type: 'session.close', event_id: 'bye' });
    const event = await closed;
    assert.equal(event.reason, 'close_requested');
    assert.equal(event.client_event_id, 'bye');
  } finally {
    live.close();
    mic.stop();
    heard.sink?.stop();
  }
  assert.match(text('session.input_transcript.delta'), HEARD);
  assert.ok(text('session.output_transcript.delta').endsWith('The capital of France is Paris.'));
  assert.equal(received.at(-1).type, 'session.closed');
  assert.deepEqual(sdkErrors, []);
});

/** Resolves once `done()` holds (checked every 50 ms), or fails with `why`. */
function until(done, why) {
  return new Promise((resolve, reject) => {
    const began = Date.now();
    const timer = setInterval(() => {
      if (done()) {
        clearInterval(timer);
        resolve();
      } else if (Date.now() - began > TIMEOUT_MS) {
        clearInterval(timer);
        reject(new Error(why));
      }
    }, 50);
  });
}
