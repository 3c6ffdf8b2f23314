import * as fs from "node:fs"
import * as path from "node:path"
import { git } from "../../src/host/DeployRollback.js"
import { tempDir } from "./db.js"

/** A real git repository with two commits (VERSION 1, then 2), checked out at the second. */
export const repoWithTwoCommits = () => {
  const repo = tempDir("pynchy-repo-")
  const run = (...args: Array<string>) => git(repo, args)
  run("init", "--quiet")
  run("config", "user.email", "t@example.invalid")
  run("config", "user.name", "t")
  fs.writeFileSync(path.join(repo, "VERSION"), "1\n")
  run("add", "VERSION")
  run("commit", "--quiet", "-m", "v1")
  const previous = run("rev-parse", "HEAD")
  fs.writeFileSync(path.join(repo, "VERSION"), "2\n")
  run("commit", "--quiet", "-am", "v2")
  const next = run("rev-parse", "HEAD")
  return { repo, previous, next, run, head: () => run("rev-parse", "HEAD") }
}
