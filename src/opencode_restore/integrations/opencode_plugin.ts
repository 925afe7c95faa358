// opencode-restore for opencode: puts the cited restoration of the session into the
// compaction request and into every request after it, and records compacted sessions in
// the opencode-restore store. All logic stays in the Python CLI; this file only calls it.
// Installed by `opencode-restore install opencode`, removed by `opencode-restore uninstall
// opencode`. It imports nothing (no `@opencode-ai/plugin`, no package.json): opencode loads
// it as it is, offline.
//
// - `experimental.session.compacting`: `opencode-restore restore <sessionID> --agent opencode
//   --format prompt -q`, pushed into the compaction context (the model writes its summary
//   with it) and kept for the session.
// - `experimental.chat.messages.transform`: every request after a compaction carries that
//   restoration once, as a text part of the compaction's own user message ("What did we do
//   so far?"), right before the model's summary. Only the request is changed, never the
//   stored session. After a restart (nothing kept) the first request of an already
//   compacted session waits for the restore, at most the hooks' budget (`[hooks]
//   budget_seconds` of the user's config file or OPENCODE_RESTORE_HOOKS_BUDGET_SECONDS,
//   default 8 s, read when first needed: the start waits on nothing), and carries it once;
//   past the budget it goes on without, and the requests after the restore ends carry it.
// - the `session.compacted` event: `opencode-restore hook --agent opencode` records it.

// The CLI, as `install` found it (argv form, no shell).
const COMMAND: string[] = ["opencode-restore"]
// The restoration must not hold the compaction up for long: past this, nothing is added.
const TIMEOUT_MS = 25_000

type Hooks = Record<string, (...args: any[]) => Promise<void>>
type Part = { id?: string; type: string; text?: string; [key: string]: unknown }
type Message = {
  info: { id: string; sessionID: string; role: string; summary?: boolean; parentID?: string }
  parts: Part[]
}

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

const restore = (sessionID: string) =>
  run(["restore", sessionID, "--agent", "opencode", "--format", "prompt", "-q"])

// The hooks' budget, as `opencode-restore hook` reads it: OPENCODE_RESTORE_HOOKS_BUDGET_SECONDS,
// else `[hooks] budget_seconds` of the user's config file (platformdirs' place, else the
// legacy ~/.config/opencode-restore), else 8 s.
const DEFAULT_BUDGET_S = 8

function seconds(value: unknown): number | undefined {
  const n = typeof value === "string" && value.trim() ? Number(value) : NaN
  return Number.isFinite(n) && n > 0 ? n : undefined
}

async function present(path: string): Promise<boolean> {
  try {
    await Bun.file(path).stat()
    return true
  } catch {
    return false
  }
}

// The user's config file, as `dirs.user_config_path` finds it: platformdirs' place, unless
// only the legacy ~/.config/opencode-restore exists.
async function configFile(): Promise<string> {
  const env = process.env
  const home = env.HOME || env.USERPROFILE || ""
  const legacy = `${home}/.config/opencode-restore`
  let dir = `${env.XDG_CONFIG_HOME || `${home}/.config`}/opencode-restore`
  if (process.platform === "darwin") dir = `${home}/Library/Application Support/opencode-restore`
  if (process.platform === "win32") dir = `${env.LOCALAPPDATA || home}/opencode-restore`
  if (dir !== legacy && !(await present(dir)) && (await present(legacy))) dir = legacy
  return `${dir}/config.toml`
}

async function readBudget(): Promise<number> {
  const fromEnv = seconds(process.env.OPENCODE_RESTORE_HOOKS_BUDGET_SECONDS)
  if (fromEnv !== undefined) return fromEnv * 1000
  try {
    const file = Bun.file(await configFile())
    if (await file.exists()) {
      const hooks = (await file.text()).split(/^\s*\[/m).find((s) => /^hooks\s*\]/.test(s))
      const found = hooks?.match(/^\s*budget_seconds\s*=\s*([0-9.eE+-]+)/m)
      return (seconds(found?.[1]) ?? DEFAULT_BUDGET_S) * 1000
    }
  } catch {
    // unreadable: the default
  }
  return DEFAULT_BUDGET_S * 1000
}

let budget: Promise<number> | undefined
const budgetMs = () => (budget ??= readBudget())

// `promise`'s value, or undefined once `ms` have passed (the promise goes on).
function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), ms)
    promise.then((value) => {
      clearTimeout(timer)
      resolve(value)
    })
  })
}

export const OpencodeRestore = async ({ directory }: { directory: string }): Promise<Hooks> => {
  // sessionID -> the restoration its running compaction was given (not yet bound to a summary)
  const pending = new Map<string, string>()
  // summary message id -> the restoration the requests after that compaction carry
  const restorations = new Map<string, string>()
  // summary message id -> the restore started after a restart (nothing was kept for it)
  const inflight = new Map<string, Promise<string>>()

  return {
    "experimental.session.compacting": async (input: { sessionID: string }, output: { context: string[] }) => {
      const text = await restore(input.sessionID)
      if (!text) return
      output.context.push(text)
      pending.set(input.sessionID, text)
    },
    "experimental.chat.messages.transform": async (_input: unknown, output: { messages: Message[] }) => {
      const messages = output.messages
      if (!Array.isArray(messages)) return
      const summary = messages.findLast((m) => m.info?.role === "assistant" && m.info.summary === true)
      if (!summary?.info.parentID) return
      const asked = messages.find((m) => m.info.id === summary.info.parentID)
      if (!asked || !asked.parts.some((p) => p.type === "compaction")) return
      const key = summary.info.id
      const sessionID = summary.info.sessionID
      let text = restorations.get(key)
      if (text === undefined && pending.has(sessionID)) {
        text = pending.get(sessionID) as string
        pending.delete(sessionID)
        restorations.set(key, text)
      }
      if (text === undefined) {
        // Compacted before this process started: restore once; this request waits for it
        // within the budget, later ones carry it once it is done.
        if (inflight.has(key)) return
        const running = restore(sessionID).then((found) => {
          restorations.set(key, found)
          return found
        })
        inflight.set(key, running)
        text = await within(running, await budgetMs())
        if (text === undefined) return
      }
      if (!text || asked.parts.some((p) => p.text === text)) return
      asked.parts.push({
        id: `${asked.info.id}-opencode-restore`,
        sessionID,
        messageID: asked.info.id,
        type: "text",
        text,
        synthetic: true,
      })
    },
    event: async ({ event }: { event: { type: string; properties?: Record<string, any> } }) => {
      if (event.type !== "session.compacted") return
      const sessionID = event.properties?.sessionID
      if (typeof sessionID !== "string") return
      const payload = { session_id: sessionID, cwd: directory, hook_event_name: "session.compacted" }
      await run(["hook", "--agent", "opencode", JSON.stringify(payload)])
    },
  }
}
