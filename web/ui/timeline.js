// The session timeline view (a <details> under the conversation): the current session's
// report, or a recent one's, drawn as lanes (web/lib/timeline.js); a click on a turn
// shows its stages' milliseconds and its words, and plays the recording from there. A
// GPT-Live session's delegations are drawn on their lane as they happen.
import { authHeaders } from "../lib/auth.js";
import { t } from "../lib/i18n.js";
import { timelineSvg, turnDetail } from "../lib/timeline.js";
import { $ } from "./dom.js";

const get = (url) => fetch(url, { headers: authHeaders(sessionStorage), cache: "no-store" });

export class TimelineView {
  constructor() {
    this.root = $("timeline");
    this.report = null;
    this.currentId = null;
    this.audioUrl = null;
    this.delegations = new Map(); // the current session's (GPT-Live), by id
  }

  bind() {
    this.root.addEventListener("toggle", () => {
      if (this.root.open) this.refresh();
    });
    $("timeline-refresh").addEventListener("click", () => this.refresh());
    $("timeline-session").addEventListener("change", (e) => this.load(e.target.value));
    $("timeline-svg").addEventListener("click", (e) => {
      const turn = e.target.closest("[data-turn]");
      if (turn) this.showTurn(Number(turn.dataset.turn));
    });
  }

  /** The session the page talks in now (from session.created). */
  current(id) {
    this.currentId = id;
    this.delegations.clear();
    if (this.root.open) this.refresh();
  }

  async refresh() {
    const res = await get("/v1/r1voice/sessions");
    const select = $("timeline-session");
    if (!res.ok) return this.say(t("timeline.none", { status: res.status }));
    const { data } = await res.json();
    select.replaceChildren(
      ...data.map((s) => {
        const when = s.id === this.currentId ? t("timeline.thisSession") : new Date(s.started_at * 1000).toLocaleTimeString();
        const label = t("timeline.option", { when, turns: s.turns }) + (s.recording_url ? ` · ${t("timeline.recorded")}` : "");
        const option = new Option(label, s.id);
        option.selected = s.id === (this.report?.id ?? this.currentId);
        return option;
      }),
    );
    if (select.value) await this.load(select.value);
  }

  async load(id) {
    const res = await get(`/v1/r1voice/sessions/${encodeURIComponent(id)}`);
    if (!res.ok) return this.say(t("timeline.missing", { id, status: res.status }));
    this.report = await res.json();
    this.draw();
    this.say(t(this.report.turns.length ? "timeline.hint" : "timeline.empty"));
    await this.loadRecording(this.report.recording_url);
  }

  /** A delegation of the current session, as it changed: drawn at once if it is shown. */
  delegation(d) {
    this.delegations.set(d.id, d);
    if (this.report && this.report.id === this.currentId) this.draw();
    else if (this.root.open) this.refresh();
  }

  draw() {
    const delegations = this.report.id === this.currentId ? [...this.delegations.values()] : [];
    $("timeline-svg").innerHTML = timelineSvg(this.report, { delegations });
  }

  async loadRecording(url) {
    const audio = $("timeline-audio");
    if (this.audioUrl) URL.revokeObjectURL(this.audioUrl);
    this.audioUrl = null;
    audio.hidden = !url;
    if (!url) return audio.removeAttribute("src");
    const res = await get(url); // fetched with the key: an <audio src> cannot send it
    if (!res.ok) return;
    this.audioUrl = URL.createObjectURL(await res.blob());
    audio.src = this.audioUrl;
  }

  showTurn(number) {
    const d = this.report && turnDetail(this.report, number);
    if (!d) return;
    const box = $("timeline-turn");
    const head = document.createElement("p");
    head.textContent = t(d.interrupted ? "timeline.interrupted" : "timeline.turn", { number: d.number, reason: d.endReason, ms: Math.round(d.ms) });
    const list = document.createElement("ol");
    for (const s of d.stages) {
      const li = document.createElement("li");
      li.textContent = `${s.name}: +${Math.round(s.startMs)} ms, ${Math.round(s.ms)} ms`;
      list.append(li);
    }
    const words = document.createElement("p");
    words.textContent = t("timeline.words", { user: d.user ?? "—", answer: d.answer ?? "—" });
    box.replaceChildren(head, list, words);
    const audio = $("timeline-audio");
    const turn = this.report.turns.find((t) => t.number === number);
    if (this.audioUrl && turn) {
      audio.currentTime = turn.start_ms / 1000;
      audio.play().catch(() => {}); // a page without a gesture yet may not play
    }
  }

  say(text) {
    $("timeline-turn").textContent = text;
  }
}
