// Notices: problems shown at the top of the page, each with a way out (Retry, Reconnect
// now, ...) and a dismiss button; one per kind, a new one replacing the old.
import { h } from "./dom.js";

export class Notices {
  /** hooks: onShow(kind, message) */
  constructor(root, hooks = {}) {
    this.root = root;
    this.hooks = hooks;
  }

  /** actions: [{label, run}], a button each. Returns the notice's element. */
  show(kind, message, actions = []) {
    this.clear(kind);
    const el = h(
      "div",
      { class: "notice", role: "alert", dataset: { kind } },
      h("span", { class: "text" }, message),
      ...actions.map((a) => h("button", { type: "button", class: "action", onclick: a.run }, a.label)),
      h("button", { type: "button", class: "dismiss", "aria-label": "Dismiss", onclick: () => this.clear(kind) }, "×"),
    );
    this.root.append(el);
    if (this.hooks.onShow) this.hooks.onShow(kind, message);
    return el;
  }

  clear(kind) {
    for (const el of this.root.querySelectorAll(`.notice[data-kind="${kind}"]`)) el.remove();
  }

  has(kind) {
    return this.root.querySelector(`.notice[data-kind="${kind}"]`) !== null;
  }
}
