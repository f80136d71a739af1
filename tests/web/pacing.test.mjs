import assert from "node:assert/strict";
import { test } from "node:test";

import { Pacer } from "../../web/lib/pacing.js";

test("200 ms are due at once, then 20 ms chunks as real time passes", () => {
  const p = new Pacer(24000, 24000);
  const first = p.due(0);
  assert.equal(first.length, 10);
  assert.deepEqual(first[0], [0, 480]);
  assert.deepEqual(first[9], [4320, 4800]);
  assert.deepEqual(p.due(10), [[4800, 5280]], "a chunk is due once any of it is");
  assert.deepEqual(p.due(15), []);
  assert.deepEqual(p.due(40), [[5280, 5760]]);
  assert.equal(p.sent, 5760);
  assert.equal(p.progress, 0.24);
  assert.ok(!p.done);
});

test("the last chunk may run past the end; then it is done", () => {
  const p = new Pacer(1000, 24000);
  assert.deepEqual(p.due(0), [[0, 480], [480, 960], [960, 1440]]);
  assert.ok(p.done);
  assert.equal(p.progress, 1);
  assert.deepEqual(p.due(1000), []);
});

test("an empty file has nothing to send", () => {
  const p = new Pacer(0, 24000);
  assert.ok(p.done);
  assert.deepEqual(p.due(0), []);
});
