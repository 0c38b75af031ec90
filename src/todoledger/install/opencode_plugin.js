// todoledger: mirror opencode's todo list into the ledger.
// Written by `todoledger install opencode`; a reinstall rewrites this file.
//
// Each `todo.updated` event carries the session's whole list; it goes to
// `todoledger hook opencode` as JSON on stdin. A mirror must never disturb
// the session, so every failure is swallowed: the next update resends the
// whole list anyway.
const COMMAND = __COMMAND__

export const TodoLedger = async ({ $, directory }) => ({
  event: async ({ event }) => {
    try {
      if (!event || event.type !== "todo.updated") return
      const body = JSON.stringify({ cwd: directory, ...event.properties })
      // Bun Shell quotes interpolations, so a COMMAND path with spaces is safe.
      await $`${COMMAND} hook opencode < ${new Response(body)}`.quiet().nothrow()
    } catch {
      // ignored on purpose, see above
    }
  },
})
