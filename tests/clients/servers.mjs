// The servers the client tests talk to: gateway_harness (Model or scripted engine + Service +
// Server on an ephemeral port, tests/gateway/gateway_harness.cpp) and the real ds4d daemon on a
// model, both on 127.0.0.1 only. Paths come from ctest's environment (DS4D_GATEWAY_HARNESS,
// DS4D_DAEMON, DS4D_TINY_MODEL, DS4D_AGENT_MODEL).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import assert from 'node:assert/strict';
import { before, after } from 'node:test';

// Starts gateway_harness with `args`; resolves {child, base} once it prints READY. stop() ends it.
export function startHarness(args) {
  const harness = process.env.DS4D_GATEWAY_HARNESS;
  if (!harness) throw new Error('DS4D_GATEWAY_HARNESS must point at gateway_harness');
  return new Promise((resolve, reject) => {
    const child = spawn(harness, args, { stdio: ['pipe', 'pipe', 'inherit'] });
    let port = null;
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.startsWith('LISTENING ')) port = Number(line.slice(10));
      if (line === 'READY') resolve({ child, base: `http://127.0.0.1:${port}`, stop: () => child.stdin.end() });
    });
    child.on('exit', (code) => reject(new Error(`gateway_harness ${args.join(' ')} exited with ${code}`)));
  });
}

// The two harnesses both SDK suites use, started before and stopped after the file's tests: `tiny`,
// the tiny DS4 model (DS4D_TINY_MODEL) behind SDK_KEY, and `tools`, a scripted engine that replies
// WEATHER_TOOL_REPLY. Returns the object whose fields are set once `before` has run.
export const SDK_KEY = 'test-key';
export const WEATHER_TOOL_REPLY =
  'The user wants the weather.</think>Let me check.\n\n<｜DSML｜tool_calls>\n' +
  '<｜DSML｜invoke name="get_weather">\n' +
  '<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n' +
  '<｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>\n' +
  '</｜DSML｜invoke>\n</｜DSML｜tool_calls>';
export function useSdkHarnesses() {
  const h = { tiny: null, tools: null };
  before(async () => {
    assert.ok(process.env.DS4D_TINY_MODEL, 'DS4D_TINY_MODEL must point at a tiny DS4 GGUF');
    [h.tiny, h.tools] = await Promise.all([
      startHarness(['--model', process.env.DS4D_TINY_MODEL, '--api-key', SDK_KEY, '--ctx', '2048']),
      startHarness(['--scripted', WEATHER_TOOL_REPLY]),
    ]);
  });
  after(() => {
    for (const x of [h.tiny, h.tools]) if (x) x.stop();
  });
  return h;
}

// Starts the ds4d daemon on `model` with an API key, a port chosen by the kernel, its own cache
// directory and `extraArgs`; resolves {base, key, log(), metric(name), stop()} once /health is
// 200. The daemon's log is kept in memory (log()) for failure messages.
export async function startDaemon(model, extraArgs = []) {
  const daemon = process.env.DS4D_DAEMON;
  if (!daemon) throw new Error('DS4D_DAEMON must point at the ds4d binary');
  const dir = mkdtempSync(join(tmpdir(), 'ds4d-clients-'));
  const key = 'clients-test-key';
  writeFileSync(join(dir, 'api.key'), `${key}\n`);
  const args = ['--model', model, '--server-host', '127.0.0.1', '--server-port', '0',
    '--server-api-key-file', join(dir, 'api.key'), '--cache-dir', join(dir, 'cache'), ...extraArgs];
  const child = spawn(daemon, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const base = await new Promise((resolve, reject) => {
    const onLine = (line) => {
      log += line + '\n';
      const m = /listening on 127\.0\.0\.1:(\d+)/.exec(line);
      if (m) resolve(`http://127.0.0.1:${m[1]}`);
    };
    createInterface({ input: child.stdout }).on('line', onLine);
    createInterface({ input: child.stderr }).on('line', onLine);
    child.on('exit', (code) => reject(new Error(`ds4d ${args.join(' ')} exited with ${code}:\n${log}`)));
  });
  for (let i = 0; ; i++) {
    const r = await fetch(`${base}/health`).catch(() => null);
    if (r?.status === 200) break;
    if (i > 600) throw new Error(`ds4d never became healthy:\n${log}`);
    await new Promise((res) => setTimeout(res, 200));
  }
  return {
    base,
    key,
    log: () => log,
    // The sum of a Prometheus counter over all its label sets (0 when absent).
    async metric(name) {
      const text = await fetch(`${base}/metrics`, { headers: { Authorization: `Bearer ${key}` } }).then((r) => r.text());
      let sum = 0;
      for (const line of text.split('\n')) {
        if (line.startsWith(`${name} `) || line.startsWith(`${name}{`)) sum += Number(line.split(' ').at(-1));
      }
      return sum;
    },
    stop() {
      return new Promise((resolve) => {
        child.removeAllListeners('exit');
        child.on('exit', () => {
          rmSync(dir, { recursive: true, force: true });
          resolve();
        });
        child.kill('SIGTERM');
      });
    },
  };
}
