// The first plain page: talk button, mic -> PCM16 24 kHz over the Realtime WebSocket,
// gapless playback of the answer, transcripts shown as they arrive.
const RATE = 24000;
const $ = (id) => document.getElementById(id);
const log = $("log");
let ws, ctx, player, micNode, micStream;
let talking = false;
const bubbles = {};   // item_id -> element
// Debug state for tests and the console: counts of server events by type, answer audio
// received, samples the player reports played (and dropped by flushes), and every flush.
const debug = window.r1voice = { events: {}, audioDeltas: 0, audioSamples: 0, played: 0, dropped: 0, flushes: [] };

function flush(reason) {
  if (!player) return;
  player.port.postMessage("flush");
  debug.flushes.push({ reason, audioDeltas: debug.audioDeltas, played: debug.played });
}

function bubble(id, role, text = "") {
  if (!bubbles[id]) {
    const el = document.createElement("div");
    el.className = `msg ${role}`;
    el.dataset.role = role.split(" ")[0];
    log.appendChild(el);
    bubbles[id] = el;
  }
  if (text) bubbles[id].textContent = text;
  return bubbles[id];
}

function b64FromInt16(int16) {
  const bytes = new Uint8Array(int16.buffer);
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

function floatFromB64(b64) {
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  const int16 = new Int16Array(bytes.buffer);
  const out = new Float32Array(int16.length);
  for (let i = 0; i < int16.length; i++) out[i] = int16[i] / 32768;
  return out;
}

function sendFloat(samples) {
  const int16 = new Int16Array(samples.length);
  for (let i = 0; i < samples.length; i++) int16[i] = Math.max(-1, Math.min(1, samples[i])) * 32767;
  ws.send(JSON.stringify({ type: "input_audio_buffer.append", audio: b64FromInt16(int16) }));
}

async function ensureAudio() {
  if (ctx) return;
  ctx = new AudioContext({ sampleRate: RATE });
  await ctx.audioWorklet.addModule("/web/capture-worklet.js");
  await ctx.audioWorklet.addModule("/web/player-worklet.js");
  player = new AudioWorkletNode(ctx, "player-processor");
  player.connect(ctx.destination);
  player.port.onmessage = (e) => {
    debug.played = e.data.played;
    if (e.data.dropped) debug.dropped += e.data.dropped;
  };
}

function onEvent(ev) {
  debug.events[ev.type] = (debug.events[ev.type] || 0) + 1;
  switch (ev.type) {
    case "session.created": $("status").textContent = "connected"; $("talk").disabled = false; break;
    case "input_audio_buffer.speech_started":
      flush("speech_started");  // barge-in: stop what is playing now
      bubble(ev.item_id, "user partial", "…"); break;
    case "conversation.item.input_audio_transcription.delta": {
      const el = bubble(ev.item_id, "user partial");
      el.textContent = (el.textContent === "…" ? "" : el.textContent) + ev.delta; break;
    }
    case "conversation.item.input_audio_transcription.completed": {
      const el = bubble(ev.item_id, "user", ev.transcript || "(nothing heard)");
      el.className = "msg user"; break;
    }
    case "conversation.item.created":
      if (ev.item.role === "user" && ev.item.content[0] && ev.item.content[0].type === "input_text") bubble(ev.item.id, "user", ev.item.content[0].text);
      break;
    case "response.audio_transcript.delta": case "response.text.delta":
    case "response.output_audio_transcript.delta": case "response.output_text.delta":
      bubble(ev.item_id, "assistant").textContent += ev.delta; break;
    case "r1voice.reasoning.delta": {
      let el = bubbles[ev.item_id + ":reasoning"];
      if (!el) {
        el = document.createElement("details");
        el.className = "msg reasoning";
        el.innerHTML = "<summary>reasoning</summary><div></div>";
        log.insertBefore(el, bubble(ev.item_id, "assistant"));
        bubbles[ev.item_id + ":reasoning"] = el;
      }
      el.querySelector("div").textContent += ev.delta; break;
    }
    case "conversation.item.deleted":
      if (bubbles[ev.item_id]) { bubbles[ev.item_id].remove(); delete bubbles[ev.item_id]; }
      break;
    case "response.audio.delta": case "response.output_audio.delta": {
      const samples = floatFromB64(ev.delta);
      debug.audioDeltas += 1; debug.audioSamples += samples.length;
      player && player.port.postMessage(samples); break;
    }
    case "response.done":
      if (ev.response.status === "cancelled") {
        flush("cancelled");
        // only what was heard stays in the conversation: show that, marked as interrupted
        for (const item of ev.response.output || []) {
          const part = (item.content || [])[0];
          const kept = part && (part.transcript ?? part.text);
          if (bubbles[item.id] && typeof kept === "string") {
            bubbles[item.id].textContent = kept || "…";
            bubbles[item.id].classList.add("interrupted");
          }
        }
      }
      break;
    case "r1voice.turn.metrics":
      $("metrics").textContent = `end of speech → transcript ${ev.speech_stopped_to_transcript_ms} ms · first token ${ev.speech_stopped_to_first_token_ms} ms · first audio ${ev.speech_stopped_to_first_audio_ms} ms`;
      break;
    case "error": {
      const el = document.createElement("div");
      el.className = "error"; el.textContent = `${ev.error.code}: ${ev.error.message}`;
      log.appendChild(el); break;
    }
  }
}

function connect() {
  const proto = location.protocol === "https:" ? "wss" : "ws";
  ws = new WebSocket(`${proto}://${location.host}/v1/realtime`, ["realtime"]);
  ws.onmessage = (m) => onEvent(JSON.parse(m.data));
  ws.onclose = (e) => {
    $("status").textContent = `disconnected (${e.reason || e.code}); retrying…`;
    $("talk").disabled = true;
    setTimeout(connect, 2000);
  };
}

async function toggleTalk() {
  await ensureAudio();
  await ctx.resume();
  if (!talking) {
    micStream = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true } });
    const src = ctx.createMediaStreamSource(micStream);
    micNode = new AudioWorkletNode(ctx, "capture-processor");
    micNode.port.onmessage = (e) => ws.readyState === 1 && sendFloat(e.data);
    src.connect(micNode);
    talking = true;
  } else {
    micStream.getTracks().forEach((t) => t.stop());
    micNode.disconnect();
    talking = false;
  }
  $("talk").setAttribute("aria-pressed", String(talking));
  $("talk").textContent = talking ? "Stop" : "Talk";
}

async function sendFile(file) {
  await ensureAudio();
  await ctx.resume();
  const decoded = await ctx.decodeAudioData(await file.arrayBuffer());  // resampled to 24 kHz
  const data = decoded.getChannelData(0);
  const step = RATE / 50;  // 20 ms chunks
  for (let i = 0; i < data.length; i += step) sendFloat(data.subarray(i, i + step));
  sendFloat(new Float32Array(RATE));  // a second of silence ends the turn
}

$("talk").addEventListener("click", toggleTalk);
$("file").addEventListener("change", (e) => e.target.files[0] && sendFile(e.target.files[0]));
document.body.addEventListener("dragover", (e) => { e.preventDefault(); document.body.classList.add("drag"); });
document.body.addEventListener("dragleave", () => document.body.classList.remove("drag"));
document.body.addEventListener("drop", (e) => {
  e.preventDefault(); document.body.classList.remove("drag");
  if (e.dataTransfer.files[0]) sendFile(e.dataTransfer.files[0]);
});
$("text-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const text = $("text").value.trim();
  if (!text) return;
  $("text").value = "";
  ws.send(JSON.stringify({ type: "conversation.item.create", item: { type: "message", role: "user", content: [{ type: "input_text", text }] } }));
  ws.send(JSON.stringify({ type: "response.create" }));
});
connect();
