/**
 * A plugin module (its source, written to a file by the test) whose one host action, `test.drop`,
 * is high risk, so calling it asks a human; running it writes "ran" to `marker`.
 */
export const approvalProbePlugin = (marker: string) => `
import * as fs from "node:fs"
export default {
  name: "approval-probe",
  serviceHandler: () => ({
    name: "test.drop",
    description: "Drops a table.",
    inputSchema: { type: "object" },
    risk: "high",
    handler: () => { fs.writeFileSync(${JSON.stringify(marker)}, "ran"); return "dropped" }
  })
}
`
