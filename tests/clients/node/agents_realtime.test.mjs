// @openai/agents-realtime (OpenAI's Agents SDK for JavaScript) against a real r1voice
// server over TLS, with the SDK's defaults and only the URL changed. Driven by
// tests/clients/test_node_client.py, which starts the server (a scripted LLM, real VAD,
// ASR and TTS), trusts its self-signed certificate (NODE_EXTRA_CA_CERTS) and passes:
//   R1VOICE_URL         wss://127.0.0.1:PORT/v1/realtime
//   R1VOICE_EVENTS_OUT  where to write every server event received (JSON), validated
//                       there against the openai Python SDK's event models
//   R1VOICE_SPEECH_PCM  a spoken question: raw PCM16 mono at 24 kHz
//   R1VOICE_BARGE_IN_PCM  one short phrase to talk over an answer with (same format)
// Run one scenario with --test-name-pattern; without R1VOICE_URL everything is skipped.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { after, test } from 'node:test';

import { RealtimeAgent, RealtimeSession, tool } from '@openai/agents-realtime';

const URL = process.env.R1VOICE_URL;
const skip = URL ? false : 'R1VOICE_URL is not set (run by tests/clients/test_node_client.py)';
// generous: two shared CPU cores run ASR and TTS for every turn
const TIMEOUT_MS = Number(process.env.R1VOICE_TIMEOUT_MS ?? 240_000);
const received = []; // every server event, as sent
const sdkErrors = []; // every `error` the session reported

after(() => {
  if (process.env.R1VOICE_EVENTS_OUT) {
    writeFileSync(process.env.R1VOICE_EVENTS_OUT, JSON.stringify({ received, sdkErrors }));
  }
});

/** The SDK's defaults; only the URL (and a placeholder key) point it at r1voice. */
async function connect(agent) {
  const session = new RealtimeSession(agent, { transport: 'websocket' });
  session.on('transport_event', (event) => received.push(event));
  session.on('error', (event) => sdkErrors.push(errorText(event.error)));
  await session.connect({ apiKey: 'sk-test', url: URL });
  await until(session, 'transport_event', (e) => e.type === 'session.updated');
  return session;
}

function errorText(error) {
  try {
    return JSON.stringify(error).slice(0, 500);
  } catch {
    return String(error);
  }
}

/** Resolves with the first `name` event for which `match` is true. */
function until(session, name, match = () => true) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${name} in time`)), TIMEOUT_MS);
    const listener = (...args) => {
      if (!match(...args)) return;
      clearTimeout(timer);
      session.off(name, listener);
      resolve(args);
    };
    session.on(name, listener);
  });
}

/** The first server event of `type` received from index `from` on (already or later). */
function serverEvent(session, type, from = 0) {
  const earlier = received.slice(from).find((e) => e.type === type);
  if (earlier) return Promise.resolve(earlier);
  return until(session, 'transport_event', (e) => e.type === type).then(([e]) => e);
}

/** The spoken question (R1VOICE_SPEECH_PCM) or, with `env`, another clip. */
function speech(env = 'R1VOICE_SPEECH_PCM') {
  const pcm = readFileSync(process.env[env]);
  return pcm.buffer.slice(pcm.byteOffset, pcm.byteOffset + pcm.byteLength);
}

async function sendSpeech(session, pcm, paced = false) {
  const step = 960; // 20 ms of 24 kHz PCM16
  for (let i = 0; i < pcm.byteLength; i += step) {
    session.sendAudio(pcm.slice(i, i + step));
    if (paced) await new Promise((r) => setTimeout(r, 20));
  }
}

const agent = () => new RealtimeAgent({ name: 'Assistant', instructions: 'Answer briefly.' });
const assistantItems = (session) =>
  session.history.filter((i) => i.type === 'message' && i.role === 'assistant');
const spoken = (item) =>
  item.content.map((part) => part.transcript ?? part.text ?? '').join('');

test('text turn', { skip, timeout: TIMEOUT_MS }, async () => {
  const session = await connect(agent());
  try {
    const from = received.length;
    const ended = until(session, 'agent_end');
    session.sendMessage('What is the capital of France?');
    await ended;
    assert.equal((await serverEvent(session, 'response.done', from)).response.status, 'completed');
    const [answer] = assistantItems(session);
    assert.equal(spoken(answer), 'The capital of France is Paris.');
    assert.equal(answer.status, 'completed');
    const user = session.history.find((i) => i.type === 'message' && i.role === 'user');
    assert.equal(user.content[0].text, 'What is the capital of France?');
    assert.ok(received.some((e) => e.type === 'response.output_audio.delta'));
  } finally {
    session.close();
  }
});

test('audio turn', { skip, timeout: TIMEOUT_MS }, async () => {
  const session = await connect(agent());
  const ends = []; // where each agent_end fell among the received events
  const onEnd = () => ends.push(received.length);
  session.on('agent_end', onEnd);
  try {
    // A client this much faster than real time gets the turn model's verdict alone at
    // each pause, and it hears JFK's "And so, my fellow Americans" finished: that part
    // may be a turn of its own (answered, or merged away) before the one that holds the
    // rest of the sentence.
    const whole = (e) =>
      e.type === 'conversation.item.input_audio_transcription.completed' &&
      /country/.test(e.transcript.toLowerCase());
    const transcribing = until(session, 'transport_event', whole);
    await sendSpeech(session, speech());
    const [transcribed] = await transcribing;
    // An answer to the sentence's first part, started before the rest was heard, is
    // cancelled by it and may end after this transcript: the answer is the next one.
    let done = await serverEvent(session, 'response.done', received.indexOf(transcribed));
    while (done.response.status === 'cancelled') {
      done = await serverEvent(session, 'response.done', received.indexOf(done) + 1);
    }
    assert.equal(done.response.status, 'completed');
    // the SDK's history is up to date once its agent_end for this answer is out
    if (!ends.some((n) => n > received.indexOf(done))) await until(session, 'agent_end');
    const user = session.history.find((i) => i.itemId === transcribed.item_id);
    assert.match(spoken(user).toLowerCase(), /country/); // the SDK's history has it too
    const answer = session.history.find((i) => i.itemId === done.response.output[0].id);
    assert.equal(spoken(answer), 'The capital of France is Paris.');
  } finally {
    session.off('agent_end', onEnd);
    session.close();
  }
});

test('barge-in truncates the answer while it plays', { skip, timeout: TIMEOUT_MS }, async () => {
  const session = await connect(agent());
  try {
    const from = received.length;
    const firstAudio = until(session, 'audio');
    const interrupted = until(session, 'audio_interrupted');
    session.sendMessage('Tell me a long story.');
    await firstAudio;
    const answerId = (await serverEvent(session, 'response.output_item.added', from)).item.id;
    // the user talks over the answer: speech_started makes the SDK truncate what it played
    // (one short phrase: see test_barge_in_during_a_merged_turn in test_agents_sdk.py)
    await sendSpeech(session, speech('R1VOICE_BARGE_IN_PCM'), true);
    await interrupted;
    assert.equal((await serverEvent(session, 'conversation.item.truncated', from)).item_id, answerId);
    const firstDone = await serverEvent(session, 'response.done', from);
    assert.equal(firstDone.response.status, 'cancelled');
    await serverEvent(session, 'conversation.item.input_audio_transcription.completed', from);
    const item = session.history.find((i) => i.itemId === answerId);
    assert.equal(item.status, 'incomplete');
    assert.deepEqual(
      received.filter((e) => e.type === 'error'),
      [],
    );
  } finally {
    session.close();
  }
});

test('tool call round trip', { skip, timeout: TIMEOUT_MS }, async () => {
  const getWeather = tool({
    name: 'get_weather',
    description: 'The weather in a city.',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
      additionalProperties: false,
    },
    strict: true,
    execute: async ({ city }) => `It is sunny in ${city}.`,
  });
  const weather = new RealtimeAgent({
    name: 'Assistant',
    instructions: 'Use your tools.',
    tools: [getWeather],
  });
  const session = await connect(weather);
  try {
    const toolEnd = until(session, 'agent_tool_end');
    session.sendMessage('What is the weather in Paris?');
    const [, , , result] = await toolEnd;
    assert.equal(result, 'It is sunny in Paris.');
    const answered = (e) =>
      e.type === 'response.done' && !e.response.output.some((o) => o.type === 'function_call');
    if (!received.some(answered)) await until(session, 'transport_event', answered);
    const answers = assistantItems(session);
    assert.equal(spoken(answers.at(-1)), 'It is sunny in Paris.');
    const calls = session.history.filter((i) => i.type === 'function_call');
    assert.deepEqual(
      calls.map((c) => [c.name, JSON.parse(c.arguments), c.output]),
      [['get_weather', { city: 'Paris' }, 'It is sunny in Paris.']],
    );
  } finally {
    session.close();
  }
});
