// An SDK host in front of the Claude panel shim: the official Claude Agent SDK for TypeScript
// (`@anthropic-ai/claude-agent-sdk`, pinned and installed by scripts/install-agents), its
// `query()` in streaming-input mode keeping one session open as an editor panel does, and
// `canUseTool` answering approvals. The Rust test (crates/shim/tests/suite/sdk_host.rs) steers
// it, one JSON object a line:
//
//   argv[2]  {"sdk": "<the SDK's sdk.mjs>", "shim": "<the cross-agent-claude-shim link>",
//             "form": "link" | "wrapper", "realClaude": "<path>", "cwd": "<dir>"}
//            `link`: the link is the executable itself (`pathToClaudeCodeExecutable` alone, as
//            SDK hosts other than the VS Code extension start it); `wrapper`: the link is
//            given the real binary first (`executableArgs`), as `claudeCode.claudeProcessWrapper`
//            has the extension start it.
//   stdin    {"cmd": "user", "text": "…", "spelling": "type-first" | "other-key-first"}
//            {"cmd": "approve", "allow": true | false}   answers the approval being asked
//            {"cmd": "end"}                              ends the input; the session closes
//   stdout   {"event": "message", "message": <every SDK message>}
//            {"event": "can_use_tool", "tool": "…", "input": {…}, "toolUseID": "…"}
//            {"event": "done"} | {"event": "error", "error": "…"}
//
// The SDK writes each prompt message with JSON.stringify, keys in the order the host gave
// them: `other-key-first` makes it write `{"session_id":"","type":"user",…}`.

import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const config = JSON.parse(process.argv[2] ?? "{}");
const { query } = await import(pathToFileURL(config.sdk).href);

function emit(event) {
  process.stdout.write(`${JSON.stringify(event)}\n`);
}

/** The prompt stream: messages pushed by the test's commands, ended by `end`. */
const prompts = [];
let wakePrompts = null;
let inputEnded = false;

async function* promptStream() {
  for (;;) {
    if (prompts.length > 0) {
      yield prompts.shift();
    } else if (inputEnded) {
      return;
    } else {
      await new Promise((resolve) => {
        wakePrompts = resolve;
      });
    }
  }
}

function wake() {
  const resolve = wakePrompts;
  wakePrompts = null;
  resolve?.();
}

function userMessage(text, spelling) {
  const message = { role: "user", content: text };
  switch (spelling) {
    case "type-first":
      return { type: "user", message, parent_tool_use_id: null, session_id: "" };
    case "other-key-first":
      return { session_id: "", type: "user", message, parent_tool_use_id: null };
    default:
      throw new Error(`unknown spelling ${spelling}`);
  }
}

/** Approvals asked and not yet answered by the test, oldest first. */
const approvals = [];
const answers = [];

function canUseTool(tool, input, { toolUseID }) {
  emit({ event: "can_use_tool", tool, input, toolUseID });
  return new Promise((resolve) => {
    const answer = answers.shift();
    if (answer) {
      resolve(decide(answer, input));
    } else {
      approvals.push((next) => resolve(decide(next, input)));
    }
  });
}

function decide(answer, input) {
  return answer.allow
    ? { behavior: "allow", updatedInput: input }
    : { behavior: "deny", message: "denied by the SDK host" };
}

const commands = createInterface({ input: process.stdin });
commands.on("line", (line) => {
  if (line.trim() === "") {
    return;
  }
  const command = JSON.parse(line);
  switch (command.cmd) {
    case "user":
      prompts.push(userMessage(command.text, command.spelling));
      wake();
      break;
    case "approve": {
      const waiting = approvals.shift();
      if (waiting) {
        waiting(command);
      } else {
        answers.push(command);
      }
      break;
    }
    case "end":
      inputEnded = true;
      wake();
      break;
    default:
      emit({ event: "error", error: `unknown command ${line}` });
  }
});

const options = {
  pathToClaudeCodeExecutable: config.shim,
  executableArgs: config.form === "wrapper" ? [config.realClaude] : [],
  cwd: config.cwd,
  canUseTool,
  stderr: (text) => process.stderr.write(text),
};

try {
  for await (const message of query({ prompt: promptStream(), options })) {
    emit({ event: "message", message });
  }
  emit({ event: "done" });
  commands.close();
} catch (error) {
  emit({ event: "error", error: String(error?.stack ?? error) });
  process.exitCode = 1;
  commands.close();
}
