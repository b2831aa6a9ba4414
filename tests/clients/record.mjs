// Records what the real coding agents send (issue #15 item 6): each agent runs against
// recorder.mjs on 127.0.0.1 for a turn with one tool call (the recorder answers the first
// request that offers the tool with a call of it), a second turn continuing the session, and a
// turn whose first three attempts get a 500 (how it retries). The sanitized requests land in
// recordings/<agent>.jsonl and recordings/<agent>-retry.jsonl; recordings_replay.test.mjs sends
// them to the gateway; claude-code-toolsearch.jsonl is a turn whose tool is ToolSearch.
// Usage: node record.mjs [agent | recording ...]   (needs `npm ci` here first; about a minute per agent)
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { AGENTS, CLIENTS_DIR, missingAgents, runAgent } from './agents.mjs';

// The tool each recording's first answer calls, and its arguments (a file in the agent's work
// dir). claude-code-toolsearch calls Claude Code's ToolSearch, whose result loads the deferred
// WebFetch by a tool_reference block.
const TOOLS = {
  'claude-code': ['Read', (work) => ({ file_path: join(work, 'hello.txt') })],
  'claude-code-toolsearch': ['ToolSearch', () => ({ query: 'select:WebFetch' })],
  codex: ['exec_command', () => ({ cmd: 'cat hello.txt' })],
  opencode: ['read', (work) => ({ filePath: join(work, 'hello.txt') })],
};

function startRecorder(out, extra, scrubRoot) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(CLIENTS_DIR, 'recorder.mjs'), out, ...extra], {
      stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, RECORDER_SCRUB: scrubRoot },
    });
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.startsWith('LISTENING ')) resolve({ child, base: `http://127.0.0.1:${line.slice(10)}` });
    });
    child.on('exit', (code) => reject(new Error(`recorder exited with ${code}`)));
  });
}

function stopRecorder(rec) {
  return new Promise((resolve) => {
    rec.child.removeAllListeners('exit');
    rec.child.on('exit', resolve);
    rec.child.stdin.end();
  });
}

async function session(agent, name, recorderArgs, turns) {
  const scratch = mkdtempSync(join(tmpdir(), `ds4d-record-${agent}-`));
  const work = join(scratch, 'work');
  mkdirSync(work, { recursive: true });
  writeFileSync(join(work, 'hello.txt'), 'hello from the fixture\n');
  const out = join(CLIENTS_DIR, 'recordings', `${name}.jsonl`);
  const [tool, args] = TOOLS[name] ?? TOOLS[agent];
  const extra = recorderArgs === 'tool' ? ['--tool', tool, JSON.stringify(args(work))] : recorderArgs;
  const rec = await startRecorder(out, extra, scratch);
  const opts = { base: rec.base, apiKey: 'sk-recording', model: 'deepseek-v4-flash', scratch, timeoutMs: 180000 };
  for (const [i, prompt] of turns.entries()) {
    const r = await runAgent(agent, opts, prompt, { resume: i > 0 });
    console.log(`${name} turn ${i + 1}: exit ${r.code} in ${r.ms} ms`);
    if (r.code !== 0) console.log(r.stdout, r.stderr);
  }
  await stopRecorder(rec);
  rmSync(scratch, { recursive: true, force: true });
  const lines = readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  for (const l of lines) console.log(`  ${l.seq} +${l.ms} ms ${l.method} ${l.url} ${l.body_bytes} B`);
}

// Every recording: its name (recordings/<name>.jsonl), the agent, the recorder's arguments, the turns.
const RECORDINGS = AGENTS.flatMap((agent) => [
  { name: agent, agent, recorder: 'tool', turns: ['Read hello.txt', 'And again'] },
  { name: `${agent}-retry`, agent, recorder: ['--fail', '3', '--no-bodies'], turns: ['Say hi'] },
  ...(agent === 'claude-code'
    ? [{ name: 'claude-code-toolsearch', agent, recorder: 'tool', turns: ['Fetch https://example.com'] }]
    : []),
]);

// Arguments name agents (all their recordings) or single recordings; none: everything.
const args = process.argv.slice(2);
const chosen = RECORDINGS.filter((r) => !args.length || args.includes(r.agent) || args.includes(r.name));
const missing = missingAgents();
if (missing.length) {
  console.error(`record: ${missing.join(', ')} not installed; run: npm ci --prefix ${CLIENTS_DIR}`);
  process.exit(1);
}
mkdirSync(join(CLIENTS_DIR, 'recordings'), { recursive: true });
for (const r of chosen) await session(r.agent, r.name, r.recorder, r.turns);
