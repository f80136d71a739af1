// With R1VOICE_API_KEY set the server wants a key. The page asks for it once, keeps it for
// this tab only (sessionStorage), and opens the WebSocket with a short-lived client
// secret minted by POST /v1/realtime/client_secrets (OpenAI's GA ephemeral keys), so the
// key itself is never put in the WebSocket handshake.

import { t } from "./i18n.js";

export const KEY_ITEM = "r1voice.apiKey";
export const KEY_SUBPROTOCOL = "openai-insecure-api-key.";

/** The server refused the key (or wants one we do not have). */
export class KeyRequired extends Error {}

/** Headers for the page's own HTTP calls (the components list). */
export function authHeaders(storage) {
  const key = storage.getItem(KEY_ITEM);
  return key ? { Authorization: `Bearer ${key}` } : {};
}

/** The subprotocols to open /v1/realtime with: "realtime", plus a client secret when
 * a key is stored. Throws KeyRequired when the server refuses the stored key. */
export async function realtimeProtocols(fetchImpl, storage) {
  const key = storage.getItem(KEY_ITEM);
  if (!key) return ["realtime"];
  const res = await fetchImpl("/v1/realtime/client_secrets", {
    method: "POST",
    headers: { ...authHeaders(storage), "Content-Type": "application/json" },
    body: JSON.stringify({ expires_after: { anchor: "created_at", seconds: 60 } }),
  });
  if (res.status === 401) {
    storage.removeItem(KEY_ITEM);
    throw new KeyRequired(t("notice.keyRefused"));
  }
  if (!res.ok) throw new Error(`client secret request failed (HTTP ${res.status})`);
  const { value } = await res.json();
  return ["realtime", KEY_SUBPROTOCOL + value];
}

/** Whether a refused handshake was for want of a key (browsers see only code 1006). */
export async function keyWanted(fetchImpl, storage) {
  const res = await fetchImpl("/v1/r1voice/components", { headers: authHeaders(storage), cache: "no-store" });
  return res.status === 401;
}
