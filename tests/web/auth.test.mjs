import { test } from "node:test";
import assert from "node:assert/strict";

import { KEY_ITEM, KEY_SUBPROTOCOL, KeyRequired, authHeaders, keyWanted, realtimeProtocols } from "../../web/lib/auth.js";

class MemoryStorage {
  constructor(items = {}) { this.items = { ...items }; }
  getItem(k) { return k in this.items ? this.items[k] : null; }
  setItem(k, v) { this.items[k] = String(v); }
  removeItem(k) { delete this.items[k]; }
}

function fakeFetch(replies) {
  const calls = [];
  const impl = async (url, options = {}) => {
    calls.push({ url, options });
    const { status, body } = replies[url];
    return { status, ok: status < 400, json: async () => body };
  };
  return { impl, calls };
}

test("without a stored key the page connects plainly", async () => {
  const { impl, calls } = fakeFetch({});
  assert.deepEqual(await realtimeProtocols(impl, new MemoryStorage()), ["realtime"]);
  assert.equal(calls.length, 0);
  assert.deepEqual(authHeaders(new MemoryStorage()), {});
});

test("a stored key mints a client secret; the key never goes in the subprotocol", async () => {
  const storage = new MemoryStorage({ [KEY_ITEM]: "sk-1" });
  const { impl, calls } = fakeFetch({ "/v1/realtime/client_secrets": { status: 200, body: { value: "ek_abc", expires_at: 1 } } });
  const protocols = await realtimeProtocols(impl, storage);
  assert.deepEqual(protocols, ["realtime", `${KEY_SUBPROTOCOL}ek_abc`]);
  assert.equal(calls[0].options.method, "POST");
  assert.equal(calls[0].options.headers.Authorization, "Bearer sk-1");
  assert.ok(!protocols.join(" ").includes("sk-1"));
});

test("a refused key is forgotten and reported", async () => {
  const storage = new MemoryStorage({ [KEY_ITEM]: "sk-wrong" });
  const { impl } = fakeFetch({ "/v1/realtime/client_secrets": { status: 401, body: {} } });
  await assert.rejects(realtimeProtocols(impl, storage), KeyRequired);
  assert.equal(storage.getItem(KEY_ITEM), null);
});

test("a refused handshake is told apart by the components endpoint's 401", async () => {
  const wants = fakeFetch({ "/v1/r1voice/components": { status: 401, body: {} } });
  assert.equal(await keyWanted(wants.impl, new MemoryStorage()), true);
  const open = fakeFetch({ "/v1/r1voice/components": { status: 200, body: {} } });
  assert.equal(await keyWanted(open.impl, new MemoryStorage()), false);
});
