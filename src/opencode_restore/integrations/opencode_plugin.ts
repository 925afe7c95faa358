// opencode-restore for opencode: puts the cited restoration of the session into the
// compaction context, and records compacted sessions in the opencode-restore store.
// All logic stays in the Python CLI; this file only calls it. Installed by
// `opencode-restore install opencode`, removed by `opencode-restore uninstall opencode`.

// The CLI, as `install` found it (argv form, no shell).
const COMMAND: string[] = ["opencode-restore"]
// The restoration must not hold the compaction up for long: past this, nothing is added.
const TIMEOUT_MS = 25_000

type Hooks = Record<string, (...args: any[]) => Promise<void>>

async function run(args: string[]): Promise<string> {
  try {
    const proc = Bun.spawn([...COMMAND, ...args], { stdout: "pipe", stderr: "ignore", stdin: "ignore" })
    const timer = setTimeout(() => proc.kill(), TIMEOUT_MS)
    const text = await new Response(proc.stdout).text()
    const code = await proc.exited
    clearTimeout(timer)
    return code === 0 ? text.trim() : ""
  } catch {
    return "" // never fail the agent
  }
}

export const OpencodeRestore = async ({ directory }: { directory: string }): Promise<Hooks> => ({
  "experimental.session.compacting": async (input: { sessionID: string }, output: { context: string[] }) => {
    const text = await run(["restore", input.sessionID, "--agent", "opencode", "--format", "prompt", "-q"])
    if (text) output.context.push(text)
  },
  event: async ({ event }: { event: { type: string; properties?: Record<string, any> } }) => {
    if (event.type !== "session.compacted") return
    const sessionID = event.properties?.sessionID
    if (typeof sessionID !== "string") return
    const payload = { session_id: sessionID, cwd: directory, hook_event_name: "session.compacted" }
    await run(["hook", "--agent", "opencode", JSON.stringify(payload)])
  },
})
