import assert from "node:assert/strict";
import { test } from "node:test";

import { keptText, userMessage } from "../../web/lib/items.js";

test("user messages: typed or spoken", () => {
  const typed = { id: "i1", type: "message", role: "user", content: [{ type: "input_text", text: "Hello" }] };
  assert.deepEqual(userMessage(typed), { id: "i1", typed: true, text: "Hello" });
  assert.deepEqual(userMessage({ ...typed, content: [{ type: "input_text" }] }), { id: "i1", typed: true, text: "" });
  const spoken = { id: "i2", type: "message", role: "user", content: [{ type: "input_audio", transcript: "Hi" }] };
  assert.deepEqual(userMessage(spoken), { id: "i2", typed: false, transcript: "Hi" });
  assert.deepEqual(userMessage({ ...spoken, content: [{ type: "input_audio" }] }), { id: "i2", typed: false, transcript: undefined });
});

test("what is not a user message is none", () => {
  assert.equal(userMessage(undefined), null);
  assert.equal(userMessage({ id: "a", type: "message", role: "assistant", content: [{ type: "output_text", text: "x" }] }), null);
  assert.equal(userMessage({ id: "f", type: "function_call_output", role: "user" }), null);
  assert.equal(userMessage({ id: "e", type: "message", role: "user", content: [] }), null);
});

test("what the server kept of an answer", () => {
  assert.equal(keptText({ id: "a", role: "assistant", content: [{ transcript: "Once upon", text: "x" }] }), "Once upon");
  assert.equal(keptText({ id: "a", role: "assistant", content: [{ text: "" }] }), "");
  assert.equal(keptText({ id: "a", role: "assistant", content: [] }), null);
  assert.equal(keptText({ id: "u", role: "user", content: [{ transcript: "Hi" }] }), null);
  assert.equal(keptText(undefined), null);
});
