// todoledger: the plan at session start and after compaction, and opencode's
// own todo list mirrored into the ledger.
// Written by `todoledger install opencode`; a reinstall rewrites this file.
//
// - `todo.updated` (builds that still have `todowrite`) carries the session's
//   whole list; it goes to `todoledger hook opencode` as JSON on stdin.
// - `experimental.chat.system.transform` adds the recovery text
//   (`todoledger prime`) to the system prompt of the session's requests: read
//   once per session and again after a compaction (`session.compacted`), so
//   the prompt stays the same (and cached) in between.
// - `experimental.session.compacting` puts it into the compaction summary.
// - `tool.execute.before` on `bash`: a command that mentions todoledger goes to
//   `todoledger hook opencode --screen`, which denies a person-only verb
//   (approve, trust, gate remove, undo --any, done --force): the plugin throws
//   its reason, so the tool does not run. Other commands cost nothing here.
// Nothing else here may disturb the session: every other failure is swallowed.
const COMMAND = __COMMAND__

export const TodoLedger = async ({ $, directory }) => {
  const primed = new Map() // sessionID -> recovery text
  const prime = async () => {
    // Bun Shell quotes interpolations, so a COMMAND path with spaces is safe.
    const out = await $`${COMMAND} prime`.cwd(directory).quiet().nothrow()
    return out.exitCode === 0 ? out.stdout.toString().trim() : ""
  }
  return {
    "tool.execute.before": async (input, output) => {
      if (input?.tool !== "bash") return
      const command = String(output?.args?.command ?? "")
      if (!command.replace(/["'\\]/g, "").includes("todoledger")) return
      const body = JSON.stringify({ tool_input: { command } })
      let out
      try {
        out = await $`${COMMAND} hook opencode --screen < ${new Response(body)}`.quiet().nothrow()
      } catch {
        return // the screen could not run: the ledger's own rules still hold
      }
      if (out.exitCode === 2) throw new Error(out.stderr.toString().trim())
    },
    event: async ({ event }) => {
      try {
        if (!event) return
        if (event.type === "session.compacted") primed.delete(event.properties?.sessionID ?? "session")
        if (event.type !== "todo.updated") return
        const body = JSON.stringify({ cwd: directory, ...event.properties })
        await $`${COMMAND} hook opencode < ${new Response(body)}`.quiet().nothrow()
      } catch {
        // ignored on purpose, see above
      }
    },
    "experimental.chat.system.transform": async (input, output) => {
      try {
        const session = input?.sessionID ?? "session"
        if (!primed.has(session)) primed.set(session, await prime())
        const text = primed.get(session)
        if (text) output.system.push(text)
      } catch {
        // ignored on purpose, see above
      }
    },
    "experimental.session.compacting": async (input, output) => {
      try {
        const text = await prime()
        if (text) output.context.push(text)
      } catch {
        // ignored on purpose, see above
      }
    },
  }
}
