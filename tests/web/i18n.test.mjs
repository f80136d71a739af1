import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { fill, getLanguage, languageName, MESSAGES, PAGE_LANGUAGES, pickLanguage, setLanguage, t } from "../../web/lib/i18n.js";

// Texts that read the same in Chinese by nature (abbreviations a Chinese page keeps).
const IDENTICAL = ["card.inputParts", "card.llm", "card.tts"];

const EN = MESSAGES.en;
const ZH = MESSAGES["zh-CN"];
const placeholders = (s) => (s.match(/\{\w+\}/g) || []).sort();

test("both tables have exactly the same keys", () => {
  assert.deepEqual(Object.keys(ZH).sort(), Object.keys(EN).sort());
  assert.deepEqual(Object.keys(MESSAGES).sort(), PAGE_LANGUAGES.map((l) => l.code).sort());
});

test("every Chinese text is there, translated, with the English text's placeholders", () => {
  for (const [key, english] of Object.entries(EN)) {
    const chinese = ZH[key];
    assert.equal(typeof chinese, "string", key);
    assert.ok(chinese.trim().length > 0, `${key}: empty in Chinese`);
    if (IDENTICAL.includes(key)) assert.equal(chinese, english, `${key} is listed as identical`);
    else assert.notEqual(chinese, english, `${key}: not translated`);
    assert.deepEqual(placeholders(chinese), placeholders(english), `${key}: placeholders`);
  }
});

test("every key the page names is in the table", () => {
  const html = readFileSync(new URL("../../web/index.html", import.meta.url), "utf8");
  const named = [...html.matchAll(/data-i18n(?:-[a-z]+)?="([^"]+)"/g)].map((m) => m[1]);
  assert.ok(named.length > 40, `only ${named.length} texts marked in index.html`);
  for (const key of named) assert.ok(Object.hasOwn(EN, key), `index.html names ${key}`);
  const sources = ["app.js", ...["answers", "client", "conversation", "eventlog", "files", "message", "notices", "pipeline", "session", "settings", "talk"].map((n) => `ui/${n}.js`), ...["chart", "components", "events", "responses", "stages", "auth", "devices"].map((n) => `lib/${n}.js`)];
  for (const file of sources) {
    const js = readFileSync(new URL(`../../web/${file}`, import.meta.url), "utf8");
    for (const m of js.matchAll(/\bt\("([\w.]+)"/g)) assert.ok(Object.hasOwn(EN, m[1]), `${file} names ${m[1]}`);
  }
});

test("the page's language: a saved choice, else the browser's first the page has", () => {
  assert.equal(pickLanguage(["zh-CN", "en"], null), "zh-CN");
  assert.equal(pickLanguage(["zh-CN"], "en"), "en"); // the user's choice wins
  assert.equal(pickLanguage(["en-US"], "zh-CN"), "zh-CN");
  assert.equal(pickLanguage(["en-US", "zh-CN"], null), "en"); // English comes first
  assert.equal(pickLanguage(["fr-FR", "zh-TW"], null), "zh-CN"); // French is not offered
  assert.equal(pickLanguage(["zh"], undefined), "zh-CN");
  assert.equal(pickLanguage(["ZH-hans-cn"], ""), "zh-CN");
  assert.equal(pickLanguage(["fr", "de"], null), "en");
  assert.equal(pickLanguage([], null), "en");
  assert.equal(pickLanguage(undefined, "klingon"), "en"); // a saved value the page lacks
  assert.equal(pickLanguage(["zhuang"], null), "en"); // not a zh tag
});

test("t() looks up the page's language and fills {name}", () => {
  try {
    assert.equal(setLanguage("zh-CN"), "zh-CN");
    assert.equal(getLanguage(), "zh-CN");
    assert.equal(t("talk.talk"), "说话");
    assert.equal(t("card.heard", { language: languageName("zh") }), "识别语言：中文");
    assert.equal(setLanguage("en"), "en");
    assert.equal(t("talk.talk"), "Talk");
    assert.equal(t("card.heard", { language: languageName("zh") }), "Heard: Chinese");
    assert.equal(t("file.sending", { name: "q.wav", seconds: "1.5" }), "Sending “q.wav” (1.5 s)");
    assert.equal(setLanguage("fr"), "en"); // a language the page lacks: English
    assert.equal(t("no.such.key"), "no.such.key");
  } finally {
    setLanguage("en");
  }
});

test("fill leaves a placeholder it has no value for", () => {
  assert.equal(fill("{a} and {b}", { a: 1 }), "1 and {b}");
  assert.equal(fill("{a}", { a: 0 }), "0");
});

test("language names: common codes named in the page's language, others as the code", () => {
  try {
    assert.equal(languageName("en"), "English");
    assert.equal(languageName("zh-CN"), "Chinese");
    assert.equal(languageName("sw"), "sw");
    assert.equal(languageName(null), "not said");
    setLanguage("zh-CN");
    assert.equal(languageName("en"), "英语");
    assert.equal(languageName("ja"), "日语");
    assert.equal(languageName("haw"), "haw");
  } finally {
    setLanguage("en");
  }
});
