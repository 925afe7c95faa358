// opencode-restore for pi: puts the cited restoration of the session into the compaction
// request, so the summary pi keeps after /compact (or an auto-compaction) is written with it.
// All logic stays in the Python CLI; this file only calls it. Installed by
// `opencode-restore install pi`, removed by `opencode-restore uninstall pi`.
//
// On `session_before_compact` it runs `opencode-restore restore <session file> --agent pi
// --format prompt -q` and, when that prints a restoration, compacts with pi's own `compact()`
// (same prompt, model, thinking level and kept entries), the restoration added to the
// summary instructions. Anything that fails leaves pi's own compaction alone.

import { spawn } from "node:child_process"
import { compact, type ExtensionAPI } from "@mariozechner/pi-coding-agent"

// The CLI, as `install` found it (argv form, no shell).
const COMMAND: string[] = ["opencode-restore"]
// The restoration must not hold the compaction up for long: past this, nothing is added.
const TIMEOUT_MS = 25_000

function run(args: string[], signal?: AbortSignal): Promise<string> {
  return new Promise((resolve) => {
    let out = ""
    try {
      const proc = spawn(COMMAND[0], [...COMMAND.slice(1), ...args], {
        stdio: ["ignore", "pipe", "ignore"],
        signal,
      })
      const timer = setTimeout(() => proc.kill(), TIMEOUT_MS)
      proc.stdout.setEncoding("utf8")
      proc.stdout.on("data", (chunk: string) => (out += chunk))
      proc.on("error", () => {
        clearTimeout(timer)
        resolve("") // never fail the agent
      })
      proc.on("close", (code) => {
        clearTimeout(timer)
        resolve(code === 0 ? out.trim() : "")
      })
    } catch {
      resolve("")
    }
  })
}

export default function (pi: ExtensionAPI) {
  pi.on("session_before_compact", async (event, ctx) => {
    const file = ctx.sessionManager.getSessionFile()
    const model = ctx.model
    if (!file || !model) return
    const text = await run(["restore", file, "--agent", "pi", "--format", "prompt", "-q"], event.signal)
    if (!text || event.signal.aborted) return
    try {
      const auth = await ctx.modelRegistry.getApiKeyAndHeaders(model)
      if (!auth.ok || !auth.apiKey) return
      const instructions = [
        event.customInstructions,
        "Below is a cited restoration of this whole session, written by opencode-restore from its " +
          "log. Keep in the summary what it says is done, decided, failed and still open, with its " +
          "[M#] citations where they help.\n\n" +
          text,
      ]
        .filter(Boolean)
        .join("\n\n")
      const compaction = await compact(
        event.preparation,
        model,
        auth.apiKey,
        auth.headers,
        instructions,
        event.signal,
        pi.getThinkingLevel(),
      )
      return { compaction }
    } catch {
      return // pi compacts on its own
    }
  })
}
