// Playback bookkeeping: which answer item each scheduled sample belongs to, so that the
// page knows what was heard of each answer (for `conversation.item.truncate` and for
// marking interrupted answers), whether something is playing, and what a flush dropped.
// Positions are counted in samples at the protocol rate (24 kHz) from the session start;
// the player reports how many samples it has played.

import { PROTOCOL_RATE } from "./pcm.js";

export class PlaybackSchedule {
  constructor(rate = PROTOCOL_RATE) {
    this.rate = rate;
    this.segments = []; // {itemId, start, end}, in order, contiguous
    this.scheduled = 0; // samples handed to the player since the start
    this.played = 0; // samples the player reports played
  }

  /** `n` samples of item `itemId` were queued for playback. */
  enqueue(itemId, n) {
    if (n <= 0) return;
    const last = this.segments[this.segments.length - 1];
    // a flush leaves a gap; new audio starts where playback is now
    const start = Math.max(this.scheduled, this.played);
    if (last && last.itemId === itemId && last.end === start) last.end += n;
    else this.segments.push({ itemId, start, end: start + n });
    this.scheduled = start + n;
  }

  /** The player's report: samples played since the start. */
  setPlayed(played) {
    this.played = Math.max(this.played, played);
    // keep memory bounded: forget segments long finished (but keep the last few)
    while (this.segments.length > 64 && this.segments[0].end < this.played) this.segments.shift();
  }

  /** Samples queued and not yet played. */
  pending() {
    return Math.max(0, this.scheduled - this.played);
  }

  isPlaying() {
    return this.pending() > 0;
  }

  /** Milliseconds of item `itemId` played so far. */
  playedMs(itemId) {
    let n = 0;
    for (const s of this.segments) {
      if (s.itemId !== itemId) continue;
      n += Math.max(0, Math.min(s.end, this.played) - s.start);
    }
    return Math.round((n * 1000) / this.rate);
  }

  /** The item being heard now (or last heard), or null. */
  currentItem() {
    for (const s of this.segments) if (s.start <= this.played && this.played < s.end) return s.itemId;
    return null;
  }

  /** Everything queued is dropped (barge-in): returns {itemId: samplesDropped}. */
  flush(played = this.played) {
    this.setPlayed(played);
    const dropped = {};
    for (const s of this.segments) {
      const cut = s.end - Math.max(s.start, this.played);
      if (cut > 0) {
        dropped[s.itemId] = (dropped[s.itemId] || 0) + cut;
        s.end = Math.max(s.start, this.played);
      }
    }
    this.segments = this.segments.filter((s) => s.end > s.start);
    this.scheduled = this.played;
    return dropped;
  }
}
