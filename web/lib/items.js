// Conversation items as the conversation column shows them: user messages the server
// added (typed, or spoken with the transcript it may already hold), and what the server
// kept of an interrupted answer after a truncate.

/** A user message item -> {id, typed: true, text} or {id, typed: false, transcript};
 *  null for anything else. */
export function userMessage(item) {
  if (!item || item.type !== "message" || item.role !== "user") return null;
  const part = (item.content || [])[0] || {};
  if (part.type === "input_text") return { id: item.id, typed: true, text: part.text || "" };
  if (part.type === "input_audio") return { id: item.id, typed: false, transcript: part.transcript };
  return null;
}

/** The text the server keeps of an assistant item (`conversation.item.retrieved`), or null. */
export function keptText(item) {
  if (!item || item.role !== "assistant") return null;
  const part = (item.content || [])[0] || {};
  const kept = part.transcript ?? part.text;
  return typeof kept === "string" ? kept : null;
}
