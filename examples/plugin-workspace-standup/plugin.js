// A whole workspace from a plugin (docs/plugins/hooks.md, workspaceSpec): the fields of a
// `workspaces:` entry of pynchy.yaml. It joins the configured workspaces; route messages to it
// like to any other. Config turns it off with `workspaces: [{ id: standup, enabled: false }]`.
export default {
  name: "workspace-standup",
  version: "0.1.0",
  description: "The standup workspace: a stand-up note every weekday at 9.",
  workspaceSpec: (ctx) => ({
    id: "standup",
    instructions: "You write a short stand-up note: what happened yesterday, what is next, what blocks.",
    schedule: "0 9 * * 1-5",
    scheduledPrompt: "Write today's stand-up note.",
    // Where the scheduled turns run and reply: a connection of this host's config, else the terminal.
    deliverTo: ctx.connectionConfig("team") !== undefined ? "team:standup" : "terminal:standup"
  })
}
