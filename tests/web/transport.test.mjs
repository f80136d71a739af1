import assert from "node:assert/strict";
import { test } from "node:test";

import { callCloseCode, chooseTransport, DELEGATION_ITEM, PROTOCOL_ITEM, savedChoice, savedProtocol, TRANSPORT_ITEM } from "../../web/lib/transport.js";

const storage = (value) => ({ getItem: (k) => (k === TRANSPORT_ITEM ? value : null) });

test("WebRTC by default where the browser has it, else the WebSocket", () => {
  assert.equal(chooseTransport("auto", true), "webrtc");
  assert.equal(chooseTransport("auto", false), "websocket");
  assert.equal(chooseTransport("websocket", true), "websocket");
});

test("a failed call falls back to the WebSocket", () => {
  assert.equal(chooseTransport("auto", true, true), "websocket");
});

test("the saved choice is auto unless the WebSocket was pinned", () => {
  assert.equal(savedChoice(storage(null)), "auto");
  assert.equal(savedChoice(storage("websocket")), "websocket");
  assert.equal(savedChoice(storage("carrier pigeon")), "auto");
  assert.equal(savedChoice({ getItem: () => { throw new Error("denied"); } }), "auto");
});

test("refused calls map to the close codes the page explains", () => {
  assert.equal(callCloseCode(401), 4001);
  assert.equal(callCloseCode(503), 1013);
  assert.equal(callCloseCode(429), 1013);
  assert.equal(callCloseCode(400), 4002);
});

test("Realtime unless GPT-Live was chosen", () => {
  const kept = (values) => ({ getItem: (k) => values[k] ?? null });
  assert.deepEqual(savedProtocol(kept({})), { protocol: "realtime", delegation: "off" });
  assert.deepEqual(savedProtocol(kept({ [PROTOCOL_ITEM]: "live", [DELEGATION_ITEM]: "client" })), { protocol: "live", delegation: "client" });
  assert.deepEqual(savedProtocol(kept({ [PROTOCOL_ITEM]: "sip" })), { protocol: "realtime", delegation: "off" });
  assert.deepEqual(savedProtocol({ getItem: () => { throw new Error("private mode"); } }), { protocol: "realtime", delegation: "off" });
});
