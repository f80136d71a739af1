// The page's words in English and Simplified Chinese: a message table per language
// (messages/en.js, messages/zh-CN.js), the language to show (a saved choice, else the
// browser's), and t(key, {name}) to look a text up with its {name} placeholders filled.
// What the server sends (event names, model names, transcripts, its error messages) is
// never translated.

import { EN } from "./messages/en.js";
import { ZH } from "./messages/zh-CN.js";

/** The page's languages, each named in itself (as a language switch lists them). */
export const PAGE_LANGUAGES = [
  { code: "en", name: "English" },
  { code: "zh-CN", name: "简体中文" },
];

/** Where the user's choice of page language is kept (localStorage). */
export const SAVED_ITEM = "r1voice.pageLanguage";

export const MESSAGES = { en: EN, "zh-CN": ZH };

let current = "en";

/** The page's language: a saved choice (if it is one of the page's languages) wins; else
 *  the first of the browser's languages the page has (any `zh*` reads Simplified
 *  Chinese, any `en*` English); else English. */
export function pickLanguage(navigatorLanguages, saved) {
  if (saved && MESSAGES[saved]) return saved;
  for (const tag of navigatorLanguages || []) {
    const lower = String(tag).toLowerCase();
    if (lower === "zh" || lower.startsWith("zh-")) return "zh-CN";
    if (lower === "en" || lower.startsWith("en-")) return "en";
  }
  return "en";
}

/** Show texts in `lang` from now on (one of PAGE_LANGUAGES, else English); returns it. */
export function setLanguage(lang) {
  current = MESSAGES[lang] ? lang : "en";
  return current;
}

export function getLanguage() {
  return current;
}

/** `template` with each {name} replaced by params[name] (left as it is when not given). */
export function fill(template, params = {}) {
  return template.replace(/\{(\w+)\}/g, (whole, name) => (params[name] === undefined || params[name] === null ? whole : String(params[name])));
}

/** The text of `key` in the page's language, its {name} placeholders filled from
 *  `params`; English when the table lacks it, the key itself when no table has it. */
export function t(key, params) {
  const text = MESSAGES[current][key] ?? EN[key] ?? key;
  return params ? fill(text, params) : text;
}

/** Whether the page has a text for `key`. */
export function has(key) {
  return Object.hasOwn(EN, key);
}

/** The name of a language code (ISO 639-1, or a BCP 47 tag such as "zh-CN") in the page's
 *  language; an unknown code as it is, no code as "not said". */
export function languageName(code) {
  if (code === null || code === undefined || code === "") return t("lang.unknown");
  const base = String(code).toLowerCase().split(/[-_]/)[0];
  return has(`lang.${base}`) ? t(`lang.${base}`) : String(code);
}
