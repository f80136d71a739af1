// The settings drawer's form: filled from the session the server confirmed, read back as
// the fields of a `session.update`.

/** The form's values for a sessionView. A knob the session does not set (silence,
 *  eagerness, temperature) is left out, so the form keeps what it shows. The speech
 *  language is "auto" when the session detects it per turn. */
export function formValues(view, palettes) {
  const turn = view.turnDetection;
  const values = { instructions: view.instructions ?? "", speed: view.speed ?? 1, turn: turn ? turn.type : "none", language: view.transcriptionLanguage || "auto" };
  if (turn && turn.silence_duration_ms) values.silence = turn.silence_duration_ms;
  if (turn && turn.eagerness) values.eagerness = turn.eagerness;
  if (typeof view.temperature === "number") values.temperature = view.temperature;
  // semantic VAD is offered once the server lists it as available
  const semantic = palettes && palettes.turn.find((r) => r.key === "semantic_vad");
  values.semanticAvailable = Boolean(semantic && semantic.available);
  return values;
}

/** The form's values (strings, as inputs hold them) -> sessionPatch fields. Server VAD
 *  keeps the session's other knobs; semantic VAD has only its eagerness; the speech
 *  language "auto" is null (detected per turn). */
export function formFields(values, view) {
  let turnDetection = null;
  if (values.turn === "server_vad") {
    const kept = view.turnDetection && view.turnDetection.type === "server_vad" ? view.turnDetection : {};
    turnDetection = { ...kept, type: values.turn, silence_duration_ms: Number(values.silence) };
    delete turnDetection.eagerness;
  } else if (values.turn === "semantic_vad") turnDetection = { type: values.turn, eagerness: values.eagerness };
  return {
    instructions: values.instructions,
    speed: Number(values.speed),
    turnDetection,
    temperature: Number(values.temperature),
    transcriptionLanguage: !values.language || values.language === "auto" ? null : values.language,
  };
}
