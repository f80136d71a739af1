// The settings drawer: the page's language (switched at once, kept in localStorage), and
// the session's instructions, voice speed, turn detection and its knobs, speech language
// and temperature, filled from the confirmed session unless the user is editing it; and
// the header's Copy config (the session as JSON).
import { sessionUpdate } from "../lib/events.js";
import { getLanguage, t } from "../lib/i18n.js";
import { formFields, formValues } from "../lib/settings.js";
import { $, announce, h } from "./dom.js";

export class SettingsDrawer {
  /** deps: session (SessionConfig), client (RealtimeClient), debug (window.r1voice.copied),
   *  onLanguage(lang) when the user picks the page's language. */
  constructor({ session, client, debug, onLanguage }) {
    Object.assign(this, { session, client, debug, onLanguage });
    this.result = null; // () => the last Apply's outcome
    this.transport = null; // the connection in use, as the page shows it
  }

  /** Which connection the page talks over ("webrtc" or "websocket"), and in which
   *  protocol (Realtime, or GPT-Live with its delegation: none, the client, or one of the
   *  server's LLMs as the backend model). */
  showTransport(transport) {
    this.transport = transport;
    const live = this.client.protocol === "live";
    $("page-protocol").value = this.client.protocol;
    const llms = ((this.session.palettes && this.session.palettes.llm) || []).filter((r) => r.available && r.id);
    const options = [["off", t("settings.delegOff")], ["client", t("settings.delegClient")], ...llms.map((r) => [r.id, t("settings.delegModel", { model: r.id })])];
    if (!options.some(([v]) => v === this.client.delegation)) options.push([this.client.delegation, t("settings.delegModel", { model: this.client.delegation })]);
    $("live-delegation").replaceChildren(...options.map(([value, label]) => h("option", { value }, label)));
    $("live-delegation").value = this.client.delegation;
    $("live-delegation").closest("label").hidden = !live;
    $("page-transport").value = this.client.choice;
    $("transport-in-use").textContent = t("settings.inUse", { transport: transport === "webrtc" ? "WebRTC" : "WebSocket" });
    $("transport-in-use").dataset.transport = transport;
  }

  /** Show the confirmed session, unless the user has edited the form since. */
  fill() {
    if ($("settings").dataset.dirty === "true") return;
    const values = formValues(this.session.view, this.session.palettes);
    $("s-instructions").value = values.instructions;
    $("s-speed").value = values.speed;
    $("s-speed-out").textContent = String(values.speed);
    $("s-turn").value = values.turn;
    if (values.silence !== undefined) $("s-silence").value = values.silence;
    if (values.eagerness !== undefined) $("s-eagerness").value = values.eagerness;
    $("s-idle").value = values.idle;
    this._showTurnKnobs();
    if (values.temperature !== undefined) $("s-temperature").value = values.temperature;
    $("s-language").value = values.language;
    $("s-turn").querySelector("option[value=semantic_vad]").disabled = !values.semanticAvailable;
  }

  apply(e) {
    e.preventDefault();
    const values = { turn: $("s-turn").value, silence: $("s-silence").value, eagerness: $("s-eagerness").value, idle: $("s-idle").value, instructions: $("s-instructions").value, speed: $("s-speed").value, temperature: $("s-temperature").value, language: $("s-language").value };
    const fields = formFields(values, this.session.view);
    this.session.remember(fields);
    $("settings").dataset.dirty = "false";
    this.eventId = this.client.nextId("evt_settings");
    const ok = this.client.send(sessionUpdate(fields, this.eventId));
    this._result(() => t(ok ? "settings.sent" : "settings.offline"));
  }

  /** Whether `eventId` is the update this drawer sent last (its refusal is the drawer's). */
  sent(eventId) {
    return Boolean(eventId) && eventId === this.eventId;
  }

  /** The server refused a setting (`message`: the page's errorMessage of it). It refuses
   *  an update whole, so the form shows the session again as it still is. */
  refused(message) {
    this._result(() => t("settings.refused", { message: message() }));
    this.fill();
  }

  _result(text) {
    this.result = text;
    $("settings-result").textContent = text();
  }

  /** Write the drawer's own texts again in the page's (new) language. */
  relabel() {
    $("page-language").value = getLanguage();
    if (this.result) $("settings-result").textContent = this.result();
    if (this.transport) this.showTransport(this.transport);
  }

  toggle(open = $("settings").hidden) {
    $("settings").hidden = !open;
    $("settings-toggle").setAttribute("aria-expanded", String(open));
    if (open) {
      this.fill();
      $("s-instructions").focus();
    } else $("settings-toggle").focus();
  }

  async copyConfig() {
    const text = JSON.stringify(this.session.raw || {}, null, 2);
    this.debug.copied = text;
    let ok = false;
    try {
      await navigator.clipboard.writeText(text);
      ok = true;
    } catch {
      const area = h("textarea", { class: "visually-hidden" });
      area.value = text;
      document.body.append(area);
      area.select();
      try {
        ok = document.execCommand("copy");
      } catch {
        ok = false;
      }
      area.remove();
    }
    const btn = $("copy-config");
    btn.textContent = t(ok ? "header.copied" : "header.copyFailed");
    announce(t(ok ? "header.copiedSaid" : "header.copyFailedSaid"));
    setTimeout(() => (btn.textContent = t("header.copy")), 1500);
  }

  bind() {
    $("settings-toggle").addEventListener("click", () => this.toggle());
    $("settings-close").addEventListener("click", () => this.toggle(false));
    $("settings-form").addEventListener("submit", (e) => this.apply(e));
    $("settings-form").addEventListener("input", (e) => {
      $("settings").dataset.dirty = "true";
      if (e.target.id === "s-speed") $("s-speed-out").textContent = e.target.value;
      if (e.target.id === "s-turn") this._showTurnKnobs();
    });
    $("settings").addEventListener("keydown", (e) => e.key === "Escape" && this.toggle(false));
    $("copy-config").addEventListener("click", () => this.copyConfig());
    $("page-language").addEventListener("change", (e) => this.onLanguage(e.target.value));
    $("page-transport").addEventListener("change", (e) => this.client.choose(e.target.value));
    $("page-protocol").addEventListener("change", (e) => this.client.chooseProtocol(e.target.value));
    $("live-delegation").addEventListener("change", (e) => this.client.chooseProtocol("live", e.target.value));
  }

  _showTurnKnobs() {
    for (const el of $("settings").querySelectorAll("[data-for-turn]")) el.hidden = !el.dataset.forTurn.split(" ").includes($("s-turn").value);
  }
}
