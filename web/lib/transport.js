// Which connection the page talks over: WebRTC (POST /v1/realtime/calls: the microphone
// and the answer travel as Opus on RTP, the events on a data channel) where the browser has
// RTCPeerConnection, else the WebSocket; Settings can pin the WebSocket (kept in
// localStorage). A refused or failed call falls back to the WebSocket for the page's life.

export const TRANSPORT_ITEM = "r1voice.transport";
export const CHOICES = ["auto", "websocket"];
// Which protocol: OpenAI's Realtime (the default) or GPT-Live (/v1/live/sessions, over
// either connection), with Live's delegation ("off", "client" or a model's id).
export const PROTOCOL_ITEM = "r1voice.protocol";
export const PROTOCOLS = ["realtime", "live"];
export const DELEGATION_ITEM = "r1voice.liveDelegation";

/** The saved choice ("auto" unless the WebSocket was pinned). */
export function savedChoice(storage) {
  try {
    const saved = storage.getItem(TRANSPORT_ITEM);
    return CHOICES.includes(saved) ? saved : "auto";
  } catch {
    return "auto"; // storage refused (private mode)
  }
}

/** The saved protocol ("realtime" unless Live was chosen) and Live's delegation. */
export function savedProtocol(storage) {
  try {
    const protocol = storage.getItem(PROTOCOL_ITEM);
    return { protocol: PROTOCOLS.includes(protocol) ? protocol : "realtime", delegation: storage.getItem(DELEGATION_ITEM) || "off" };
  } catch {
    return { protocol: "realtime", delegation: "off" };
  }
}

/** "webrtc" or "websocket": what `choice` means in this browser, after `failedWebRTC`
 *  (either protocol, Realtime or GPT-Live). */
export function chooseTransport(choice, hasWebRTC, failedWebRTC = false) {
  return choice === "auto" && hasWebRTC && !failedWebRTC ? "webrtc" : "websocket";
}

/** A refused call (HTTP status) as the WebSocket close code the page already explains. */
export function callCloseCode(status) {
  if (status === 401) return 4001; // a key is wanted
  if (status === 503 || status === 429) return 1013; // warming up, draining or full: retry
  return 4002; // refused otherwise: fall back to the WebSocket
}
