// The live state of each pipeline stage, from Realtime events and the page's own
// signals (microphone open, audio playing). A pure reducer: state, input -> state.
import { has, t } from "./i18n.js";

export const IDLE = { asr: "idle", llm: "idle", tts: "idle", mic: false, speaking: false, responding: false };

/** input: a Realtime event ({type}) or a local signal ({type: "mic", on} / {type: "playing", on}). */
export function nextStages(state, input) {
  const s = { ...state };
  const listening = () => (s.mic ? "listening" : "idle");
  switch (input.type) {
    case "mic":
      s.mic = Boolean(input.on);
      if (s.asr === "idle" || s.asr === "listening") s.asr = listening();
      break;
    case "input_audio_buffer.speech_started":
      s.asr = "hearing";
      break;
    case "input_audio_buffer.speech_stopped":
    case "input_audio_buffer.committed":
      s.asr = "transcribing";
      break;
    case "conversation.item.input_audio_transcription.completed":
    case "conversation.item.input_audio_transcription.failed":
    case "input_audio_buffer.cleared":
      if (s.asr !== "hearing") s.asr = listening();
      break;
    case "response.created":
      s.responding = true;
      s.llm = "thinking";
      break;
    case "r1voice.reasoning.delta":
      s.llm = "thinking";
      break;
    case "response.output_audio_transcript.delta":
    case "response.output_text.delta":
      s.llm = "writing";
      break;
    case "response.output_audio_transcript.done":
    case "response.output_text.done":
      s.llm = "idle";
      break;
    case "response.output_audio.delta":
      s.tts = "speaking";
      break;
    case "response.done":
      s.responding = false;
      s.llm = "idle";
      if (!s.speaking) s.tts = "idle";
      if (s.asr === "transcribing") s.asr = listening();
      break;
    case "playing":
      s.speaking = Boolean(input.on);
      s.tts = s.speaking ? "speaking" : s.responding && s.tts === "speaking" ? "speaking" : "idle";
      break;
    case "reset":
      return { ...IDLE, mic: s.mic, asr: listening() };
    default:
      return state;
  }
  return s;
}

/** The stages now, kept as inputs arrive; `onChange(state)` after each. */
export class StageTracker {
  constructor(onChange) {
    this.state = { ...IDLE };
    this.onChange = onChange;
  }

  update(input) {
    this.state = nextStages(this.state, input);
    this.onChange(this.state);
  }

  /** The connection closed: every stage idle, the microphone closed. */
  reset() {
    this.state = { ...IDLE };
    this.onChange(this.state);
  }
}

/** What a card says of a stage's state, in the page's language. */
export function stateLabel(state) {
  return has(`state.${state}`) ? t(`state.${state}`) : String(state);
}
