// The developer view: Realtime events both ways, newest last, filterable; audio payloads
// elided and runs of audio events folded into one line with a count.
import { elide, isAudioEvent } from "../lib/events.js";
import { t } from "../lib/i18n.js";
import { h } from "./dom.js";

const MAX_ENTRIES = 600;

export class EventLog {
  constructor({ list, filter, clear, count }) {
    this.list = list;
    this.filter = filter;
    this.count = count;
    this.total = 0;
    this.last = null;
    filter.addEventListener("input", () => this._applyFilter());
    clear.addEventListener("click", () => {
      list.replaceChildren();
      this.last = null;
    });
    list.addEventListener("toggle", (e) => this._render(e.target), true);
  }

  _matches(li) {
    const q = this.filter.value.trim().toLowerCase();
    if (!q) return true;
    return q.split(/\s+/).some((w) => li.dataset.type.includes(w) || li.dataset.dir === w);
  }

  _applyFilter() {
    for (const li of this.list.children) li.hidden = !this._matches(li);
  }

  _render(details) {
    if (!(details instanceof HTMLDetailsElement) || !details.open) return;
    const li = details.closest("li");
    details.querySelector("pre").textContent = JSON.stringify(li.event, null, 2);
  }

  /** dir: "in" (server -> page) or "out" (page -> server). */
  add(dir, ev) {
    this.total += 1;
    this.count.textContent = String(this.total);
    const copy = elide(ev);
    const type = ev.wireType || ev.type;
    const last = this.last;
    if (last && isAudioEvent(ev) && last.dataset.type === type && last.dataset.dir === dir) {
      last.folded += 1;
      last.event = copy;
      last.querySelector(".n").textContent = `×${last.folded}`;
      this._render(last.querySelector("details"));
      return;
    }
    const time = new Date().toISOString().slice(11, 23);
    const isError = type === "error";
    const li = h(
      "li",
      { class: `${dir}${isError ? " err" : ""}`, dataset: { type, dir } },
      h(
        "details",
        {},
        h("summary", {}, h("span", { class: "dir", "aria-label": t(dir === "in" ? "devlog.in" : "devlog.out") }, dir === "in" ? "↓" : "↑"), ` ${time} `, h("code", {}, type), " ", h("span", { class: "n" }), isError ? ` ${ev.error && ev.error.code}` : ""),
        h("pre", {}),
      ),
    );
    li.event = copy;
    li.folded = 1;
    li.hidden = !this._matches(li);
    this.list.append(li);
    this.last = li;
    while (this.list.children.length > MAX_ENTRIES) this.list.firstElementChild.remove();
  }
}
