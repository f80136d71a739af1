// The microphone list: what the browser's devices become as options of the picker.
import { t } from "./i18n.js";

/** Audio input devices -> [{value, label}], without the browser's "default" entry (the
 *  picker has its own); devices the page may not name yet are numbered. */
export function micOptions(devices) {
  return devices.filter((m) => m.deviceId && m.deviceId !== "default").map((m, i) => ({ value: m.deviceId, label: m.label || t("talk.micNumbered", { n: i + 1 }) }));
}
