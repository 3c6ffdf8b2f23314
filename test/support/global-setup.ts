// Runs once before the suite. Builds the bundled CLI that process-level tests (crash, lifecycle) spawn.
import { execFileSync } from "node:child_process"

export default function setup() {
  execFileSync("npm", ["run", "build", "--silent"], { stdio: "inherit" })
}
