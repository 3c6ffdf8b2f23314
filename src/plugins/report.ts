/** What `pynchy plugins` shows: the same data as text or JSON. */
import { HOOKS } from "../contracts/plugin.js"
import { type PluginFault, type PluginSource, sourceLabel } from "./errors.js"
import type { Registry } from "./registry.js"

export interface PluginReport {
  readonly plugins: ReadonlyArray<{
    readonly name: string
    readonly version: string | null
    readonly source: PluginSource
    readonly from: string
    readonly contributions: Readonly<Record<string, ReadonlyArray<string>>>
  }>
  readonly skipped: ReadonlyArray<{ readonly name: string; readonly from: string; readonly reason: string; readonly hint: string | null }>
  readonly faults: ReadonlyArray<{ readonly plugin: string; readonly hook: string; readonly code: string; readonly problem: string }>
}

export const pluginReport = (registry: Registry, faults: ReadonlyArray<PluginFault>): PluginReport => ({
  plugins: registry.plugins.map((p) => ({
    name: p.name,
    version: p.version ?? null,
    source: p.source,
    from: sourceLabel(p.source),
    contributions: Object.fromEntries(HOOKS.flatMap((h) => (p.contributions[h] !== undefined ? [[h, p.contributions[h]]] : [])))
  })),
  skipped: registry.skipped.map((s) => ({ name: s.name, from: sourceLabel(s.source), reason: s.reason, hint: s.hint ?? null })),
  faults: faults.map((f) => ({ plugin: f.plugin, hook: f.hook, code: f.code, problem: f.problem }))
})

export const renderText = (report: PluginReport): string => {
  const lines: Array<string> = [`plugins: ${report.plugins.length} loaded, ${report.skipped.length} skipped, ${report.faults.length} problem(s)`]
  for (const p of report.plugins) {
    lines.push("", `${p.name}${p.version !== null ? ` ${p.version}` : ""}  (${p.from})`)
    const hooks = Object.entries(p.contributions)
    if (hooks.length === 0) lines.push("  contributes nothing")
    const width = Math.max(0, ...hooks.map(([h]) => h.length))
    for (const [hook, names] of hooks) lines.push(`  ${hook.padEnd(width)}  ${names.join(", ")}`)
  }
  if (report.skipped.length > 0) {
    lines.push("", "skipped:")
    for (const s of report.skipped) lines.push(`  ${s.name}  (${s.from}): ${s.reason}${s.hint !== null ? `; to enable: ${s.hint}` : ""}`)
  }
  if (report.faults.length > 0) {
    lines.push("", "problems (startup would fail):")
    for (const f of report.faults) lines.push(`  ${f.plugin}  ${f.hook}  ${f.code}: ${f.problem}`)
  }
  return lines.join("\n")
}
