// The answers as they are heard: answer audio queued on the player and counted per item,
// barge-in (the audio stops; the answer is cancelled or truncated at what was heard), each
// answer's bubble from its first word to how it ended, and the busy notice with a retry.
import { errorMessage } from "../lib/events.js";
import { t } from "../lib/i18n.js";
import { decodeAudio, PROTOCOL_RATE } from "../lib/pcm.js";
import { PlaybackSchedule } from "../lib/playback.js";
import { answerFailure, answerItems, answerOutcome, responseVoice, Responses } from "../lib/responses.js";

export class Answers {
  /** deps: audio (AudioEngine), client (RealtimeClient), conversation, notices, stages
   *  (StageTracker), debug (window.r1voice: audio counts, flushes, responses), and
   *  sessionVoice() (the voice a response without its own uses). */
  constructor({ audio, client, conversation, notices, stages, debug, sessionVoice }) {
    Object.assign(this, { audio, client, conversation, notices, stages, debug, sessionVoice });
    this.schedule = new PlaybackSchedule(PROTOCOL_RATE);
    this.responses = new Responses();
    // A WebRTC call: the server plays the audio and says when (output_audio_buffer.*);
    // how long each answer played, from those events: response id -> ms.
    this.serverHeard = new Map();
    this.serverPlaying = null; // {id, since}
  }

  /** `output_audio_buffer.started` / `.stopped` / `.cleared` (WebRTC: the server's track). */
  serverAudio(ev) {
    const now = performance.now();
    const playing = this.serverPlaying;
    if (playing) this.serverHeard.set(playing.id, (this.serverHeard.get(playing.id) || 0) + now - playing.since);
    this.serverPlaying = ev.type === "output_audio_buffer.started" ? { id: ev.response_id, since: now } : null;
    const on = this.serverPlaying !== null;
    if (on !== this.stages.state.speaking) this.stages.update({ type: "playing", on });
  }

  /** `response.created`. */
  created(response) {
    this.responses.start(response.id, responseVoice(response, this.sessionVoice()));
    this.notices.clear("server-busy");
  }

  /** The first sign of an answer item: its bubble, with the voice it speaks in. */
  itemStarted(responseId, item) {
    if (!item || !item.id || this.conversation.has(item.id)) return;
    const r = this.responses.setItem(responseId, item.id);
    this.conversation.assistantStart(item.id, r && r.voice ? t("log.voice", { voice: r.voice }) : "");
  }

  /** A delta of the answer's transcript or text. */
  textDelta(ev) {
    this.itemStarted(ev.response_id, { id: ev.item_id });
    this.conversation.assistantDelta(ev.item_id, ev.delta || "");
  }

  audioDelta(ev) {
    const samples = decodeAudio(ev.delta);
    this.debug.audioDeltas += 1;
    this.debug.audioSamples += samples.length;
    if (this.responses.isStopped(ev.response_id)) return; // late audio of an interrupted answer
    this.schedule.enqueue(ev.item_id, this.audio.play(samples));
    this.debug.scheduled = this.schedule.scheduled;
  }

  audioDone() {
    this.audio.endOfAudio();
  }

  /** The player's report: samples played so far; idle when its queue ran dry. */
  played(played, idle) {
    this.schedule.setPlayed(played);
    this.debug.played = this.schedule.played;
    const playing = this.schedule.isPlaying() && !idle;
    if (playing !== this.stages.state.speaking) this.stages.update({ type: "playing", on: playing });
  }

  /** `response.done`: each answer's bubble ends; an interrupted one is cut where it was heard. */
  done(response) {
    const r = this.responses.finish(response, this.sessionVoice());
    this.debug.responses.push({ id: response.id, status: response.status, voice: r.voice, reason: response.status_details && response.status_details.reason });
    for (const item of answerItems(response)) {
      const played = this.client.serverPlays ? this.serverHeard.get(response.id) || 0 : this.schedule.playedMs(item.id);
      const outcome = answerOutcome(response, item, r.voice, played);
      this.conversation.assistantDone(item.id, outcome);
      if (outcome.interrupted) {
        this.flush("cancelled");
        if (r.truncateAt !== undefined) this._truncate(item.id, r.truncateAt);
      }
    }
    const failure = answerFailure(response);
    if (failure === "busy") this.busy();
    else if (failure) this.conversation.note(failure.note, "error");
  }

  /** Drop every queued sample now; `reason` goes to the debug record. */
  flush(reason) {
    const dropped = this.schedule.flush();
    this.audio.flush();
    this.debug.flushes.push({ reason, audioDeltas: this.debug.audioDeltas, played: this.debug.played, dropped });
    if (this.stages.state.speaking) this.stages.update({ type: "playing", on: false });
  }

  /** Stop what is playing now: the server detected speech (it cancels the answer itself),
   *  or the user pressed push-to-talk (the page cancels it and truncates what was not heard). */
  bargeIn(reason) {
    if (this.client.serverPlays) return this._serverBargeIn(reason);
    const playingItem = this.schedule.currentItem();
    const wasPlaying = this.schedule.isPlaying();
    this.responses.interrupt();
    this.flush(reason);
    if (reason !== "push_to_talk") {
      // the server stopped the answer; tell it how much was really heard (what clients do)
      if (wasPlaying && playingItem) this._truncate(playingItem, this.schedule.playedMs(playingItem));
      return;
    }
    if (this.responses.active) {
      const r = this.responses.get(this.responses.active);
      if (r && r.itemId) this.responses.cutAt(r.id, this.schedule.playedMs(r.itemId));
      this.client.send({ type: "response.cancel" }, { background: true });
    } else if (wasPlaying && playingItem) {
      this._truncate(playingItem, this.schedule.playedMs(playingItem));
    }
  }

  /** Speech over the answer was decided (`r1voice.interruption`): a backchannel or no
   *  words let the paused answer go on (its audio is wanted again, its bubble marked);
   *  `wait` (again, when the speech went on) and `interrupt` take the user's mark back
   *  (the barge-in and `response.done` do the rest). */
  decided(userItemId, verdict) {
    if (verdict !== "backchannel" && verdict !== "no_words") {
      // the speech went on after a resume ("Wait, ... stop"): not decided after all
      if (userItemId && this.conversation.has(userItemId)) this.conversation.userDidNotInterrupt(userItemId, null);
      return;
    }
    const r = this.responses.active ? this.responses.get(this.responses.active) : null;
    this.responses.resume();
    if (userItemId) this.conversation.userDidNotInterrupt(userItemId, verdict);
    if (r && r.itemId) this.conversation.assistantResumed(r.itemId);
  }

  /** Over WebRTC the server stops its track itself on speech, and keeps what was heard of
   *  the answer; pressing push-to-talk cancels the answer (the server truncates it), or
   *  clears what still plays of one already generated. */
  _serverBargeIn(reason) {
    this.responses.interrupt();
    if (reason !== "push_to_talk") return;
    if (this.responses.active) this.client.send({ type: "response.cancel" }, { background: true });
    else if (this.serverPlaying) this.client.send({ type: "output_audio_buffer.clear" }, { background: true });
  }

  /** The connection closed: nothing plays, no answer is being generated. */
  reset() {
    this.serverPlaying = null;
    this.audio.flush();
    this.schedule.flush();
    this.responses.clearActive();
  }

  /** The server was too busy to answer: say so, with a retry. */
  busy() {
    if (this.notices.has("server-busy")) return;
    const retry = () => {
      this.notices.clear("server-busy");
      this.client.send({ type: "response.create" });
    };
    this.notices.show("server-busy", () => errorMessage({ code: "server_busy" }), [{ label: () => t("notice.retry"), run: retry }]);
  }

  _truncate(itemId, ms) {
    this.client.send({ type: "conversation.item.truncate", item_id: itemId, content_index: 0, audio_end_ms: ms }, { background: true });
  }
}
