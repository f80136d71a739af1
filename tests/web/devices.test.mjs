import assert from "node:assert/strict";
import { test } from "node:test";

import { micOptions } from "../../web/lib/devices.js";

test("microphones as picker options, without the browser's default entry", () => {
  const devices = [
    { deviceId: "default", label: "Default - USB" },
    { deviceId: "usb", label: "USB" },
    { deviceId: "", label: "" },
    { deviceId: "jack", label: "" },
  ];
  assert.deepEqual(micOptions(devices), [
    { value: "usb", label: "USB" },
    { value: "jack", label: "microphone 2" },
  ]);
  assert.deepEqual(micOptions([]), []);
});
