// The typed message box: a message is sent as a user item and asks for an answer; it
// interrupts what plays, as pressing Talk does.
import { t } from "../lib/i18n.js";
import { $ } from "./dom.js";

export class MessageBox {
  /** deps: client (RealtimeClient), audio (AudioEngine), answers (barge-in), notices. */
  constructor({ client, audio, answers, notices }) {
    Object.assign(this, { client, audio, answers, notices });
  }

  send() {
    const text = $("text").value.trim();
    if (!text) return;
    if (!this.client.isOpen) {
      this.notices.show("connection", () => t("message.offline"));
      return;
    }
    $("text").value = "";
    this.audio.ensure(); // a user gesture: lets the answer play
    this.answers.bargeIn("push_to_talk");
    this.client.send({ type: "conversation.item.create", item: { type: "message", role: "user", content: [{ type: "input_text", text }] } });
    this.client.send({ type: "response.create" });
  }

  bind() {
    $("text-form").addEventListener("submit", (e) => {
      e.preventDefault();
      this.send();
    });
  }
}
