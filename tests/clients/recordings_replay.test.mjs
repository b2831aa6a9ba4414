// Every request the real agents sent (tests/clients/recordings/<agent>.jsonl: Claude Code's
// /v1/messages, Codex's /v1/responses, opencode's /v1/chat/completions, with their headers,
// tools, system-role messages, thinking settings and tool round trips) replayed to ds4d's gateway
// on a scripted engine: each must be answered 200 in its API's shape, streamed to its proper
// end, never a 400 for a field the agent sends (issue #15 item 6). Needs no npm package.
// Run by ctest (label clients) with DS4D_GATEWAY_HARNESS set.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLIENTS_DIR } from './agents.mjs';
import { startHarness } from './servers.mjs';

const KEY = 'replay-key';
// Headers replayed as recorded (the rest are transport or identify the recording run).
const KEEP = ['content-type', 'accept', 'anthropic-version', 'anthropic-beta', 'x-claude-code-session-id', 'x-app',
  'session-id', 'originator', 'x-session-id', 'x-session-affinity'];

// The end of a well-formed stream of each API.
const STREAM_END = {
  messages: /event: message_stop\s+data: \{"type":"message_stop"\}\s*$/,
  responses: /event: response\.completed\s+data: \{.*"type":"response\.completed"/,
  'chat/completions': /data: \[DONE\]\s*$/,
};

function recorded(agent) {
  return readFileSync(join(CLIENTS_DIR, 'recordings', `${agent}.jsonl`), 'utf8')
    .trim().split('\n').map((l) => JSON.parse(l))
    .filter((r) => r.method === 'POST');
}

let server;

before(async () => {
  server = await startHarness(['--scripted', 'Checked.</think>ok', '--api-key', KEY, '--ctx', '262144']);
});

after(() => server?.stop());

// Each recording and the fewest requests it must hold (a tool turn, its result, a continued
// session; claude-code-toolsearch: ToolSearch's call and the result that loads WebFetch by a
// tool_reference block).
const RECORDINGS = { 'claude-code': 3, codex: 3, opencode: 3, 'claude-code-toolsearch': 2 };

for (const [agent, fewest] of Object.entries(RECORDINGS)) {
  test(`${agent}: every recorded request is served`, async () => {
    const requests = recorded(agent);
    assert.ok(requests.length >= fewest, `${agent}: the recording has ${requests.length} requests`);
    for (const r of requests) {
      const headers = {};
      for (const k of KEEP) if (r.headers[k]) headers[k] = r.headers[k];
      if (r.headers['x-api-key']) headers['x-api-key'] = KEY;
      else headers.authorization = `Bearer ${KEY}`;
      const api = /\/v1\/(messages|responses|chat\/completions)/.exec(r.url)?.[1];
      assert.ok(api, `${agent} request ${r.seq}: unexpected path ${r.url}`);
      const res = await fetch(server.base + r.url, { method: 'POST', headers, body: JSON.stringify(r.body) });
      const text = await res.text();
      const where = `${agent} request ${r.seq} (${r.url}, ${r.body_bytes} B)`;
      assert.equal(res.status, 200, `${where}: ${text.slice(0, 600)}`);
      if (r.body.stream) {
        assert.match(res.headers.get('content-type'), /^text\/event-stream/, where);
        assert.doesNotMatch(text, /event: error|"type":"response\.failed"|"finish_reason":"error"/, where);
        assert.match(text, STREAM_END[api], `${where}: the stream does not end properly: ${text.slice(-400)}`);
      } else {
        const body = JSON.parse(text);
        assert.ok(body.id, where);
      }
    }
  });
}
