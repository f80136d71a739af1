import assert from "node:assert/strict";
import { test } from "node:test";

import { PlaybackSchedule } from "../../web/lib/playback.js";

test("played time per item follows the player's count", () => {
  const s = new PlaybackSchedule(24000);
  s.enqueue("a", 24000);
  s.enqueue("a", 12000); // merges with the previous chunk
  s.enqueue("b", 24000);
  assert.equal(s.segments.length, 2);
  assert.equal(s.scheduled, 60000);
  s.setPlayed(30000);
  assert.equal(s.playedMs("a"), 1250);
  assert.equal(s.playedMs("b"), 0);
  assert.equal(s.currentItem(), "a");
  s.setPlayed(48000);
  assert.equal(s.playedMs("a"), 1500);
  assert.equal(s.playedMs("b"), 500);
  assert.equal(s.currentItem(), "b");
  assert.ok(s.isPlaying());
  assert.equal(s.pending(), 12000);
  s.setPlayed(60000);
  assert.ok(!s.isPlaying());
  assert.equal(s.currentItem(), null);
});

test("the player's count never goes back", () => {
  const s = new PlaybackSchedule();
  s.enqueue("a", 100);
  s.setPlayed(80);
  s.setPlayed(50);
  assert.equal(s.played, 80);
});

test("a flush drops what was not played and says how much of which item", () => {
  const s = new PlaybackSchedule(24000);
  s.enqueue("a", 24000);
  s.enqueue("b", 24000);
  const dropped = s.flush(12000);
  assert.deepEqual(dropped, { a: 12000, b: 24000 });
  assert.equal(s.playedMs("a"), 500);
  assert.equal(s.playedMs("b"), 0);
  assert.ok(!s.isPlaying());
  // audio queued after the flush starts where playback is
  s.enqueue("c", 2400);
  assert.equal(s.segments.at(-1).start, 12000);
  assert.ok(s.isPlaying());
  s.setPlayed(14400);
  assert.equal(s.playedMs("c"), 100);
  assert.equal(s.playedMs("a"), 500, "the flushed item's heard time stays");
});

test("an empty flush drops nothing; empty chunks are ignored", () => {
  const s = new PlaybackSchedule();
  s.enqueue("a", 0);
  assert.equal(s.segments.length, 0);
  assert.deepEqual(s.flush(), {});
});

test("an item interleaved after another keeps both counts", () => {
  const s = new PlaybackSchedule(1000);
  s.enqueue("a", 1000);
  s.enqueue("b", 1000);
  s.enqueue("a", 1000);
  s.setPlayed(2500);
  assert.equal(s.playedMs("a"), 1500);
  assert.equal(s.playedMs("b"), 1000);
});

test("memory stays bounded over a long session", () => {
  const s = new PlaybackSchedule();
  for (let i = 0; i < 1000; i++) {
    s.enqueue(`item${i}`, 100);
    s.setPlayed((i + 1) * 100);
  }
  assert.ok(s.segments.length <= 65, `${s.segments.length} segments`);
});
