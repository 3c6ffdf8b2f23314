// A third-party pynchy plugin in plain JavaScript: no build step and no dependency on pynchy or
// Effect. The host finds it through the "pynchy" field of package.json once it is installed.
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const here = path.dirname(fileURLToPath(import.meta.url))

// The hooks and their return shapes: docs/plugins/hooks.md in the pynchy repository.
export default {
  name: "hello",
  version: "0.1.0",
  description: "Says hello: a skill that teaches greeting, and the hello.greet host action.",

  // Absolute folders, each holding a SKILL.md.
  skillPaths: () => [path.join(here, "skills", "hello")],

  // Hooks may return plain values or Promises.
  serviceHandler: async () => ({
    name: "hello.greet",
    description: "Returns a greeting for the given name.",
    inputSchema: {
      type: "object",
      properties: { name: { type: "string", minLength: 1, maxLength: 100 } },
      required: ["name"],
      additionalProperties: false
    },
    risk: "low",
    handler: async ({ name }) => ({ text: `Hello, ${name}!` })
  })
}
