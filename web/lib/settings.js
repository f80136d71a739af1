// The settings drawer's form: filled from the session the server confirmed, read back as
// the fields of a `session.update`.

/** The idle nudge choices the form offers (seconds; "off": no nudge). */
export const IDLE_CHOICES = ["off", "5", "10", "30"];

/** The form's values for a sessionView. A knob the session does not set (silence,
 *  eagerness, temperature) is left out, so the form keeps what it shows. The speech
 *  language is "auto" when the session detects it per turn; the idle nudge is the
 *  nearest choice at or above the session's `idle_timeout_ms` ("off" when it has none). */
export function formValues(view, palettes) {
  const turn = view.turnDetection;
  const values = { instructions: view.instructions ?? "", speed: view.speed ?? 1, turn: turn ? turn.type : "none", language: view.transcriptionLanguage || "auto" };
  if (turn && turn.silence_duration_ms) values.silence = turn.silence_duration_ms;
  if (turn && turn.eagerness) values.eagerness = turn.eagerness;
  const idleS = turn && turn.idle_timeout_ms ? turn.idle_timeout_ms / 1000 : null;
  values.idle = idleS === null ? "off" : IDLE_CHOICES.find((c) => c !== "off" && Number(c) >= idleS) || "30";
  if (typeof view.temperature === "number") values.temperature = view.temperature;
  // semantic VAD is offered once the server lists it as available
  const semantic = palettes && palettes.turn.find((r) => r.key === "semantic_vad");
  values.semanticAvailable = Boolean(semantic && semantic.available);
  return values;
}

/** The form's values (strings, as inputs hold them) -> sessionPatch fields. Server VAD
 *  keeps the session's other knobs; semantic VAD has only its eagerness; both take the
 *  idle nudge (`idle_timeout_ms`, left out when "off"); the speech language "auto" is
 *  null (detected per turn). */
export function formFields(values, view) {
  let turnDetection = null;
  if (values.turn === "server_vad") {
    const kept = view.turnDetection && view.turnDetection.type === "server_vad" ? view.turnDetection : {};
    turnDetection = { ...kept, type: values.turn, silence_duration_ms: Number(values.silence) };
    delete turnDetection.eagerness;
  } else if (values.turn === "semantic_vad") turnDetection = { type: values.turn, eagerness: values.eagerness };
  if (turnDetection) {
    delete turnDetection.idle_timeout_ms;
    if (values.idle && values.idle !== "off") turnDetection.idle_timeout_ms = Number(values.idle) * 1000;
  }
  return {
    instructions: values.instructions,
    speed: Number(values.speed),
    turnDetection,
    temperature: Number(values.temperature),
    transcriptionLanguage: !values.language || values.language === "auto" ? null : values.language,
  };
}
