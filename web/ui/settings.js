// The settings drawer (instructions, voice speed, turn detection and its knobs,
// temperature), filled from the confirmed session unless the user is editing it, and
// the header's Copy config (the session as JSON).
import { sessionUpdate } from "../lib/events.js";
import { formFields, formValues } from "../lib/settings.js";
import { $, announce, h } from "./dom.js";

export class SettingsDrawer {
  /** deps: session (SessionConfig), client (RealtimeClient), debug (window.r1voice.copied). */
  constructor({ session, client, debug }) {
    Object.assign(this, { session, client, debug });
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
    this._showTurnKnobs();
    if (values.temperature !== undefined) $("s-temperature").value = values.temperature;
    $("s-turn").querySelector("option[value=semantic_vad]").disabled = !values.semanticAvailable;
  }

  apply(e) {
    e.preventDefault();
    const values = { turn: $("s-turn").value, silence: $("s-silence").value, eagerness: $("s-eagerness").value, instructions: $("s-instructions").value, speed: $("s-speed").value, temperature: $("s-temperature").value };
    const fields = formFields(values, this.session.view);
    this.session.remember(fields);
    $("settings").dataset.dirty = "false";
    const ok = this.client.send(sessionUpdate(fields));
    $("settings-result").textContent = ok ? "Sent; the cards show what the server confirms." : "Not connected: applied when the page reconnects.";
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
    btn.textContent = ok ? "Copied" : "Copy failed";
    announce(ok ? "Session configuration copied as JSON" : "Could not copy: see the event log for session.updated");
    setTimeout(() => (btn.textContent = "Copy config"), 1500);
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
  }

  _showTurnKnobs() {
    for (const el of $("settings").querySelectorAll("[data-for-turn]")) el.hidden = el.dataset.forTurn !== $("s-turn").value;
  }
}
