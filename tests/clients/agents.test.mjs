// The real coding agents from npm, non-interactively, against the ds4d daemon on a model
// (issue #15 item 7): Claude Code (`claude -p`, Anthropic Messages), Codex CLI (`codex exec`,
// OpenAI Responses) and opencode (`opencode run`, OpenAI chat completions).
//
// Each agent runs two turns of one session in a scratch HOME (agents.mjs), through a relay
// (relay.mjs) that passes everything on unchanged and keeps what was said. Asserted per agent:
// - every turn exits 0, every API request the agent made was answered 200, and no answer carries
//   an error event (a protocol error on either side fails here, naming the request);
// - the second turn reuses the first: ds4d_cached_tokens_total grows during it (the prefix cache
//   served part of its prompt);
// - if the model called a tool and the agent sent the result back (a tool round trip), that
//   request was answered 200 too. Whether it happens depends on the model (the embedded tiny
//   agent model is weak): the test reports it, and DS4D_CLIENTS_REQUIRE_TOOL_ROUND_TRIP=1 makes
//   it required.
// Run by ctest (label clients) with DS4D_DAEMON and DS4D_AGENT_MODEL set; skips (exit 77) when
// the agents are not installed in tests/clients/node_modules.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AGENTS, runAgent, skipUnlessInstalled } from './agents.mjs';
import { startRelay } from './relay.mjs';
import { startDaemon } from './servers.mjs';

skipUnlessInstalled({ agents: AGENTS });

const MODEL = process.env.DS4D_AGENT_MODEL;
// Replies long enough for a whole DSML tool call (one cut by max_tokens ends the stream with an
// error by design, gateway/api/turn_stream.cpp), short for the CPU of a shared CI machine. Codex sends no
// max_output_tokens, so the daemon's context bounds it.
const MAX_OUTPUT_TOKENS = 256;
// At most this many model requests per turn where the agent has a setting for it (Claude Code,
// opencode): a weak model may call tools over and over.
const MAX_STEPS = 3;
const TURN_TIMEOUT_MS = 900000;
// DS4D_CLIENTS_AGENTS=codex,opencode runs only those (debugging).
const SELECTED = process.env.DS4D_CLIENTS_AGENTS ? process.env.DS4D_CLIENTS_AGENTS.split(',') : AGENTS;
const requireToolRoundTrip = process.env.DS4D_CLIENTS_REQUIRE_TOOL_ROUND_TRIP === '1';

let daemon;

before(async () => {
  assert.ok(MODEL, 'DS4D_AGENT_MODEL must point at a DS4 GGUF');
  daemon = await startDaemon(MODEL, ['--model-context', '32768']);
});

after(async () => {
  if (daemon) await daemon.stop();
});

// The API requests (the agents also ask for nothing else today; anything else is listed).
function apiExchanges(exchanges) {
  return exchanges.filter((e) => e.method === 'POST' && /\/v1\/(messages|responses|chat\/completions)/.test(e.path));
}

// Error answers, and error events inside streamed answers, each with the text around it.
const ERROR_EVENT = /event: error|"type":\s*"response\.failed"|"finish_reason":\s*"error"/;
function errorsIn(exchanges) {
  const problems = [];
  for (const e of exchanges) {
    const m = ERROR_EVENT.exec(e.answer);
    if (e.status !== 200) problems.push(`${e.method} ${e.path} -> ${e.status}: ${e.answer.slice(0, 400)}`);
    else if (m) problems.push(`${e.method} ${e.path}: ${e.answer.slice(Math.max(0, m.index - 300), m.index + 400)}`);
  }
  return problems;
}

// The tool calls whose results a request carries back (tool round trips so far in the session),
// as the names of the tools called, in the request's own API shape.
function toolRoundTrips(body) {
  const items = [...(body?.messages ?? []), ...(Array.isArray(body?.input) ? body.input : [])];
  const names = new Map();  // call id -> tool name
  const done = [];
  for (const m of items) {
    for (const c of m.tool_calls ?? []) names.set(c.id, c.function?.name);
    if (m.type === 'function_call') names.set(m.call_id, m.name);
    for (const b of Array.isArray(m.content) ? m.content : []) {
      if (b.type === 'tool_use') names.set(b.id, b.name);
      if (b.type === 'tool_result') done.push(names.get(b.tool_use_id) ?? '?');
    }
    if (m.role === 'tool') done.push(names.get(m.tool_call_id) ?? '?');
    if (m.type === 'function_call_output') done.push(names.get(m.call_id) ?? '?');
  }
  return done;
}

// The daemon's warnings and errors (why a generation failed).
function daemonProblems() {
  return daemon.log().split('\n').filter((l) => /\[(warning|error)\]/.test(l)).slice(-6).join('\n');
}

// A turn ended well: exit 0, or Claude Code stopping at --max-turns (exit 1, says so).
function endedWell(agent, r) {
  return r.code === 0 || (agent === 'claude-code' && r.code === 1 && /Reached max turns/.test(r.stdout + r.stderr));
}

function describe(r) {
  return `exit ${r.code}${r.signal ? ` (${r.signal})` : ''} after ${r.ms} ms\nstdout: ${r.stdout.slice(-1500)}\n` +
    `stderr: ${r.stderr.slice(-1500)}`;
}

// The daemon's request lines since log offset `from` that ended at the end of the context: the
// model never stopped (a loop of the weak tiny model; Codex sends no output limit). A sample of
// the model, which varies with the agent's prompt (it names the scratch directory), not a protocol
// error: the scenario runs again in a fresh session when turn 1 ends so, up to twice (CI saw
// Codex's turn 1 run 21,348 tokens, then Codex refused turn 2 for a full context; here 1 of 21
// runs did, so two in a row are about 1 in 400 and three about 1 in 9000).
function ranToContextEnd(from) {
  return daemon.log().slice(from).split('\n').filter((l) => /request:.*finish=context_full/.test(l));
}

class ModelRanAway extends Error {}

for (const agent of SELECTED) {
  test(`${agent}: two turns through ds4d, no protocol error, the second hits the prefix cache`, async () => {
    for (let attempt = 1; ; attempt++) {
      const from = daemon.log().length;
      try {
        return await scenario(agent, from);
      } catch (e) {
        if (!(e instanceof ModelRanAway) || attempt > 2) throw e;
        console.log(`# ${agent}: ${e.message}; the scenario runs again in a fresh session`);
      }
    }
  });
}

async function scenario(agent, from) {
  const relay = await startRelay(daemon.base);
  const scratch = mkdtempSync(join(tmpdir(), `ds4d-${agent}-`));
  try {
    mkdirSync(join(scratch, 'work'), { recursive: true });
    writeFileSync(join(scratch, 'work', 'hello.txt'), 'The answer is 42.\n');
    const opts = { base: relay.base, apiKey: daemon.key, model: 'deepseek-v4-flash', scratch,
      maxOutputTokens: MAX_OUTPUT_TOKENS, maxSteps: MAX_STEPS, timeoutMs: TURN_TIMEOUT_MS };

    const first = await runAgent(agent, opts, 'Read the file hello.txt and tell me what it says.');
    const ranAway = ranToContextEnd(from);
    if (ranAway.length > 0) throw new ModelRanAway(`turn 1: the model ran to the end of the context:\n${ranAway.join('\n')}`);
    assert.ok(endedWell(agent, first), `${agent} turn 1: ${describe(first)}\n${daemon.log().slice(-2000)}`);
    const turn1 = apiExchanges(relay.exchanges);
    assert.ok(turn1.length >= 1, `${agent} turn 1 made no API request: ${describe(first)}`);
    assert.deepEqual(errorsIn(relay.exchanges), [], `${agent} turn 1; daemon: ${daemonProblems()}`);

    const cachedBefore = await daemon.metric('ds4d_cached_tokens_total');
    const second = await runAgent(agent, opts, 'Thanks. Now say it once more.', { resume: true });
    const cachedAfter = await daemon.metric('ds4d_cached_tokens_total');
    assert.ok(endedWell(agent, second), `${agent} turn 2: ${describe(second)}\n${daemon.log().slice(-2000)}`);
    const all = apiExchanges(relay.exchanges);
    assert.ok(all.length > turn1.length, `${agent} turn 2 made no API request: ${describe(second)}`);
    assert.deepEqual(errorsIn(relay.exchanges), [], `${agent} turn 2; daemon: ${daemonProblems()}`);
    assert.ok(cachedAfter > cachedBefore,
      `${agent} turn 2 should reuse the cached prefix of turn 1 (ds4d_cached_tokens_total ${cachedBefore} -> ${cachedAfter})`);

    const trips = toolRoundTrips(all.at(-1).body);
    const other = relay.exchanges.length - all.length;
    console.log(`# ${agent}: turn 1 ${first.ms} ms (${turn1.length} requests, ` +
      `${turn1.map((e) => JSON.stringify(e.body).length).join('+')} B), turn 2 ${second.ms} ms ` +
      `(${all.length - turn1.length} requests), cached tokens in turn 2: ${cachedAfter - cachedBefore}, ` +
      `tool round trips: ${trips.length} [${trips.join(', ')}], other requests: ${other}`);
    if (requireToolRoundTrip) assert.ok(trips.length > 0, `${agent}: the model made no tool call the agent ran`);
  } finally {
    await relay.close();
    rmSync(scratch, { recursive: true, force: true });
  }
}
