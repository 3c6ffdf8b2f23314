/** The audio formats the host handles: `wav` (RIFF/WAVE, PCM) and `ogg_opus` (Opus in an Ogg container). */
export type AudioFormat = "wav" | "ogg_opus"
