// The `openai` npm package's GPT-Live WebSocket client (LiveWS, openai/resources/live/ws)
// against a real r1voice server, with only the SDK's baseURL changed. Driven by
// tests/clients/test_node_live.py, which starts the server (a scripted LLM, real VAD, ASR
// and TTS) and passes:
//   R1VOICE_BASE_URL    http://127.0.0.1:PORT/v1 (the SDK makes it ws://.../live/sessions)
//   R1VOICE_EVENTS_OUT  where to write every server event received (JSON), validated
//                       there against the openai Python SDK's Live event models
//   R1VOICE_SPEECH_PCM  a spoken question: raw PCM16 mono at 24 kHz
//   R1VOICE_API_KEY     the server's API key (the sideband needs it), or none
// Run one scenario with --test-name-pattern; without R1VOICE_BASE_URL everything is skipped.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { after, test } from 'node:test';

import OpenAI from 'openai';
import { SidebandWS } from 'openai/resources/live/sideband/ws';
import { LiveWS } from 'openai/resources/live/ws';

const BASE_URL = process.env.R1VOICE_BASE_URL;
const skip = BASE_URL ? false : 'R1VOICE_BASE_URL is not set (run by tests/clients/test_node_live.py)';
// generous: two shared CPU cores run ASR and TTS for every turn
const TIMEOUT_MS = Number(process.env.R1VOICE_TIMEOUT_MS ?? 240_000);
const API_KEY = process.env.R1VOICE_API_KEY || 'sk-test';
const received = []; // every server event, as sent (the sideband's too)
const sdkErrors = []; // every error the SDK reported

after(() => {
  if (process.env.R1VOICE_EVENTS_OUT) {
    writeFileSync(process.env.R1VOICE_EVENTS_OUT, JSON.stringify({ received, sdkErrors }));
  }
});

/** The SDK's Live WebSocket (or, given a session id, its sideband), open; only the base
 * URL (and the key) point it here. */
async function connect(sessionId) {
  const client = new OpenAI({ apiKey: API_KEY, baseURL: BASE_URL });
  const live = sessionId ? new SidebandWS(client, { session_id: sessionId }) : new LiveWS(client);
  live.events = []; // this connection's server events
  live.on('event', (event) => {
    received.push(event);
    live.events.push(event);
  });
  live.on('error', (error) => sdkErrors.push(String(error?.message ?? error)));
  await new Promise((resolve, reject) => {
    live.socket.once('open', resolve);
    live.socket.once('error', reject);
  });
  return live;
}

/** The first server event of `type` (matching `match`) on this connection from index
 * `from` on, received already or later. */
function serverEvent(live, type, match = () => true, from = 0) {
  const earlier = live.events.slice(from).find((e) => e.type === type && match(e));
  if (earlier) return Promise.resolve(earlier);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${type} in time`)), TIMEOUT_MS);
    const listener = (event) => {
      if (event.type !== type || !match(event)) return;
      clearTimeout(timer);
      live.off('event', listener);
      resolve(event);
    };
    live.on('event', listener);
  });
}

const said = () =>
  received
    .filter((e) => e.type === 'session.output_transcript.delta')
    .map((e) => e.delta)
    .join('');
const audioBytes = () =>
  received
    .filter((e) => e.type === 'session.output_audio.delta')
    .reduce((n, e) => n + Buffer.from(e.delta, 'base64').length, 0);

async function close(live) {
  const closed = serverEvent(live, 'session.closed');
  live.send({ type: 'session.close', event_id: 'bye' });
  const event = await closed;
  assert.equal(event.reason, 'close_requested');
  assert.equal(event.client_event_id, 'bye');
  live.close();
}

test('text turn', { skip, timeout: TIMEOUT_MS }, async () => {
  const live = await connect();
  const question = { role: 'user', content: [{ type: 'input_text', text: 'Capital of France?' }] };
  live.send({
    type: 'session.start',
    event_id: 'go',
    session: { model: 'gpt-live-1', instructions: 'Be brief.', input: [question] },
  });
  const started = await serverEvent(live, 'session.started');
  assert.equal(started.client_event_id, 'go');
  assert.equal(started.session.model, 'gpt-live-1');
  await serverEvent(live, 'session.output_transcript.delta', (e) => e.delta.includes('Paris'));
  await serverEvent(live, 'session.output_audio.delta', () => audioBytes() >= 24_000);
  await close(live);
  assert.equal(said(), 'The capital of France is Paris.');
  assert.deepEqual(sdkErrors, []);
});

test('audio turn and instructions append', { skip, timeout: TIMEOUT_MS }, async () => {
  const live = await connect();
  live.send({
    type: 'session.start',
    session: { model: 'gpt-live-1.1', audio: { format: { type: 'audio/pcm', rate: 24_000 } } },
  });
  await serverEvent(live, 'session.started');
  live.send({
    type: 'session.instructions.append',
    event_id: 'more',
    content: 'Answer in one sentence.',
    delegation_id: null,
  });
  const appended = await serverEvent(live, 'session.instructions.appended');
  assert.equal(appended.client_event_id, 'more');
  const pcm = readFileSync(process.env.R1VOICE_SPEECH_PCM);
  const step = 960; // 20 ms of 24 kHz PCM16
  for (let i = 0; i < pcm.length; i += step) {
    live.send({
      type: 'session.input_audio.append',
      audio: pcm.subarray(i, i + step).toString('base64'),
    });
  }
  await serverEvent(live, 'session.output_transcript.delta', (e) => e.delta.includes('Paris'));
  await close(live);
  assert.ok(said().endsWith('The capital of France is Paris.'), said()); // after a cut turn's
  assert.ok(audioBytes() > 0);
  assert.deepEqual(sdkErrors, []);
});

test('delegation answered with commentary', { skip, timeout: TIMEOUT_MS }, async () => {
  const live = await connect();
  const question = { role: 'user', content: [{ type: 'input_text', text: 'Why 42? Prove it.' }] };
  live.send({
    type: 'session.start',
    session: { model: 'gpt-live-1', input: [question], delegation: { type: 'client' } },
  });
  const created = await serverEvent(live, 'session.delegation.created');
  assert.equal(created.delegation.target, 'client');
  const id = created.delegation.id;
  await serverEvent(live, 'session.output_transcript.delta', (e) => e.delta.includes('that'));
  live.send({ type: 'session.commentary.append', content: 'It is 42.', delegation_id: id });
  await serverEvent(live, 'session.commentary.appended');
  await serverEvent(live, 'session.output_transcript.delta', (e) => e.delta.includes('two'));
  await close(live);
  assert.equal(said(), 'Let me look into that.The answer is forty-two.');
  assert.deepEqual(sdkErrors, []);
});

test('sideband attached to the session', { skip, timeout: TIMEOUT_MS }, async () => {
  const live = await connect();
  live.send({ type: 'session.start', session: { model: 'gpt-live-1' } });
  const started = await serverEvent(live, 'session.started');
  const sideband = await connect(started.session.id);
  const from = live.events.length;
  sideband.send({
    type: 'session.instructions.append',
    event_id: 'side',
    content: 'Answer in one sentence.',
    delegation_id: null,
  });
  const appended = await serverEvent(sideband, 'session.instructions.appended');
  assert.equal(appended.client_event_id, 'side');
  await serverEvent(live, 'session.instructions.appended', () => true, from); // both see it
  const closed = serverEvent(live, 'session.closed');
  sideband.send({ type: 'session.close', event_id: 'side-bye' });
  assert.equal((await closed).reason, 'close_requested');
  await serverEvent(sideband, 'session.closed');
  sideband.close();
  live.close();
  assert.deepEqual(sdkErrors, []);
});
