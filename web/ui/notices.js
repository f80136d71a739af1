// Notices: problems shown at the top of the page, each with a way out (Retry, Reconnect
// now, ...) and a dismiss button; one per kind, a new one replacing the old. A message or
// a button label given as a function is written again when the page's language changes.
import { t } from "../lib/i18n.js";
import { h } from "./dom.js";

const text = (v) => (typeof v === "function" ? v() : v);

export class Notices {
  /** hooks: onShow(kind, message) */
  constructor(root, hooks = {}) {
    this.root = root;
    this.hooks = hooks;
  }

  /** message: a string, or () => one; actions: [{label (the same), run}], a button
   *  each. Returns the notice's element. */
  show(kind, message, actions = []) {
    this.clear(kind);
    const buttons = actions.map((a) => h("button", { type: "button", class: "action", onclick: a.run }));
    const el = h(
      "div",
      { class: "notice", role: "alert", dataset: { kind } },
      h("span", { class: "text" }),
      ...buttons,
      h("button", { type: "button", class: "dismiss", onclick: () => this.clear(kind) }, "×"),
    );
    el.relabel = () => {
      el.querySelector(".text").textContent = text(message);
      buttons.forEach((b, i) => (b.textContent = text(actions[i].label)));
      el.querySelector(".dismiss").setAttribute("aria-label", t("notice.dismiss"));
    };
    el.relabel();
    this.root.append(el);
    if (this.hooks.onShow) this.hooks.onShow(kind, text(message));
    return el;
  }

  /** Write the notices again in the page's (new) language. */
  relabel() {
    for (const el of this.root.querySelectorAll(".notice")) el.relabel?.();
  }

  clear(kind) {
    for (const el of this.root.querySelectorAll(`.notice[data-kind="${kind}"]`)) el.remove();
  }

  has(kind) {
    return this.root.querySelector(`.notice[data-kind="${kind}"]`) !== null;
  }
}
