// A logging HTTP server for recording what the real coding agents send (issue #15 item 6).
//
// Usage: node recorder.mjs OUT.jsonl [--fail N] [--tool NAME ARGS_JSON] [--no-bodies]
// Binds 127.0.0.1 on an ephemeral port and prints "LISTENING <port>". Every request is appended
// to OUT.jsonl as {seq, method, url, headers, body_bytes, body} and answered with the smallest
// valid reply of the API it asked for (Anthropic Messages, OpenAI Responses, OpenAI chat
// completions; JSON or SSE as requested) so that the client finishes its turn and we see the
// whole conversation it drives. With --fail N the first N POSTs get a 500 in the API's error
// shape, to see how the client retries. With --tool, the first request that offers a tool NAME is
// answered with a call of it (arguments ARGS_JSON), to record how the client sends the call and
// its result back. With --no-bodies a body is recorded as its size and SHA-256 only (retry
// runs: the attempts repeat one body). Secrets are never written: authorization-like headers
// are replaced by their length.
import { createServer } from 'node:http';
import { appendFileSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';

const out = process.argv[2];
if (!out) {
  console.error('usage: node recorder.mjs OUT.jsonl [--fail N]');
  process.exit(2);
}
const failIdx = process.argv.indexOf('--fail');
let failLeft = failIdx > 0 ? Number(process.argv[failIdx + 1]) : 0;
const noBodies = process.argv.includes('--no-bodies');
const toolIdx = process.argv.indexOf('--tool');
let toolCall = toolIdx > 0 ? { name: process.argv[toolIdx + 1], args: process.argv[toolIdx + 2] } : null;

// The tool call to answer with, once: only when the request offers that tool.
function takeToolCall(req) {
  if (!toolCall) return null;
  const names = (req.tools ?? []).map((t) => t.name ?? t.function?.name);
  if (!names.includes(toolCall.name)) return null;
  const call = toolCall;
  toolCall = null;
  return call;
}
writeFileSync(out, '');

// Identifiers that differ per run (session and device ids, the port, the scratch directory named
// by RECORDER_SCRUB) are replaced by fixed placeholders, so recordings diff cleanly.
const scrubRoot = process.env.RECORDER_SCRUB;
let port = 0;
function scrub(text) {
  let t = text
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '00000000-0000-0000-0000-000000000000')
    .replace(/\b[0-9a-f]{64}\b/g, '0'.repeat(64))
    .replace(/ses_[0-9A-Za-z]{26}/g, 'ses_scrubbed')
    .replace(/msg_[0-9a-f]{12}[0-9A-Za-z]{14}/g, 'msg_scrubbed')
    .replace(/"turn_started_at_unix_ms\\?":\d+/g, (m) => m.replace(/\d+$/, '0'));
  if (port) t = t.split(`127.0.0.1:${port}`).join('127.0.0.1:PORT');
  if (scrubRoot) {
    // Also as Claude Code spells a directory in its project folder names (/ and . as -).
    t = t.split(scrubRoot).join('/tmp/ds4d-record');
    t = t.split(scrubRoot.replace(/[/.]/g, '-')).join('-tmp-ds4d-record');
  }
  return t;
}
const started = Date.now();

const SECRET_HEADERS = new Set(['authorization', 'x-api-key', 'cookie', 'proxy-authorization']);
let seq = 0;

function sse(res, events) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const [event, data] of events) {
    if (event) res.write(`event: ${event}\n`);
    res.write(`data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
  }
  res.end();
}

function json(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function anthropic(res, req) {
  const msg = {
    id: 'msg_rec', type: 'message', role: 'assistant', model: req.model ?? 'm',
    content: [], stop_reason: null, stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
  };
  const call = takeToolCall(req);
  if (call) {
    const block = { type: 'tool_use', id: 'toolu_rec1', name: call.name, input: {} };
    if (!req.stream) {
      return json(res, 200, { ...msg, content: [{ ...block, input: JSON.parse(call.args) }], stop_reason: 'tool_use',
        usage: { ...msg.usage, output_tokens: 5 } });
    }
    return sse(res, [
      ['message_start', { type: 'message_start', message: msg }],
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: block }],
      ['content_block_delta', { type: 'content_block_delta', index: 0,
        delta: { type: 'input_json_delta', partial_json: call.args } }],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
      ['message_delta', { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null },
        usage: { output_tokens: 5 } }],
      ['message_stop', { type: 'message_stop' }],
    ]);
  }
  if (!req.stream) {
    return json(res, 200, { ...msg, content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn',
      usage: { ...msg.usage, output_tokens: 1 } });
  }
  sse(res, [
    ['message_start', { type: 'message_start', message: msg }],
    ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
    ['ping', { type: 'ping' }],
    ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'ok' } }],
    ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: 1 } }],
    ['message_stop', { type: 'message_stop' }],
  ]);
}

function responses(res, req) {
  const item = { id: 'msg_rec', type: 'message', status: 'completed', role: 'assistant',
    content: [{ type: 'output_text', text: 'ok', annotations: [] }] };
  const base = { id: 'resp_rec', object: 'response', created_at: Math.floor(Date.now() / 1000),
    model: req.model ?? 'm', status: 'in_progress', output: [] };
  const usage = { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 1,
    output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 11 };
  const done = { ...base, status: 'completed', output: [item], usage };
  let n = 0;
  const ev = (type, body) => [type, { type, sequence_number: n++, ...body }];
  const call = takeToolCall(req);
  if (call) {
    const fc = { id: 'fc_rec1', type: 'function_call', status: 'completed', call_id: 'call_rec1', name: call.name,
      arguments: call.args };
    const finished = { ...base, status: 'completed', output: [fc], usage };
    if (!req.stream) return json(res, 200, finished);
    return sse(res, [
      ev('response.created', { response: base }),
      ev('response.in_progress', { response: base }),
      ev('response.output_item.added', { output_index: 0, item: { ...fc, status: 'in_progress', arguments: '' } }),
      ev('response.function_call_arguments.delta', { item_id: 'fc_rec1', output_index: 0, delta: call.args }),
      ev('response.function_call_arguments.done', { item_id: 'fc_rec1', output_index: 0, arguments: call.args }),
      ev('response.output_item.done', { output_index: 0, item: fc }),
      ev('response.completed', { response: finished }),
    ]);
  }
  if (!req.stream) return json(res, 200, done);
  sse(res, [
    ev('response.created', { response: base }),
    ev('response.in_progress', { response: base }),
    ev('response.output_item.added', { output_index: 0, item: { ...item, status: 'in_progress', content: [] } }),
    ev('response.content_part.added', { item_id: 'msg_rec', output_index: 0, content_index: 0,
      part: { type: 'output_text', text: '', annotations: [] } }),
    ev('response.output_text.delta', { item_id: 'msg_rec', output_index: 0, content_index: 0, delta: 'ok' }),
    ev('response.output_text.done', { item_id: 'msg_rec', output_index: 0, content_index: 0, text: 'ok' }),
    ev('response.content_part.done', { item_id: 'msg_rec', output_index: 0, content_index: 0,
      part: item.content[0] }),
    ev('response.output_item.done', { output_index: 0, item }),
    ev('response.completed', { response: done }),
  ]);
}

function chat(res, req) {
  const head = { id: 'chatcmpl-rec', created: Math.floor(Date.now() / 1000), model: req.model ?? 'm' };
  const usage = { prompt_tokens: 10, completion_tokens: 1, total_tokens: 11 };
  if (!req.stream) {
    return json(res, 200, { ...head, object: 'chat.completion', usage,
      choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }] });
  }
  const chunk = (delta, finish) => [null, { ...head, object: 'chat.completion.chunk',
    choices: [{ index: 0, delta, finish_reason: finish }] }];
  const call = takeToolCall(req);
  if (call) {
    const tc = { id: 'call_rec1', type: 'function', function: { name: call.name, arguments: call.args } };
    if (!req.stream) {
      return json(res, 200, { ...head, object: 'chat.completion', usage, choices: [{ index: 0,
        message: { role: 'assistant', content: null, tool_calls: [tc] }, finish_reason: 'tool_calls' }] });
    }
    return sse(res, [
      chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, ...tc }] }, null),
      chunk({}, 'tool_calls'),
      [null, { ...head, object: 'chat.completion.chunk', choices: [], usage }],
      [null, '[DONE]'],
    ]);
  }
  sse(res, [
    chunk({ role: 'assistant', content: '' }, null),
    chunk({ content: 'ok' }, null),
    chunk({}, 'stop'),
    [null, { ...head, object: 'chat.completion.chunk', choices: [], usage }],
    [null, '[DONE]'],
  ]);
}

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const raw = Buffer.concat(chunks);
    const headers = {};
    for (const [k, v] of Object.entries(req.headers)) {
      headers[k] = SECRET_HEADERS.has(k) ? `<redacted ${String(v).length} chars>` : v;
    }
    let body = null;
    try {
      body = raw.length ? JSON.parse(raw.toString('utf8')) : null;
    } catch {
      body = { unparsed: raw.toString('utf8').slice(0, 2000) };
    }
    const path = req.url.split('?')[0];
    const record = { seq: seq++, ms: Date.now() - started, method: req.method, url: req.url, headers,
      body_bytes: raw.length };
    if (noBodies) record.body_sha256 = createHash('sha256').update(raw).digest('base64');
    else record.body = body;
    appendFileSync(out, scrub(JSON.stringify(record)) + '\n');
    const parsed = body ?? {};
    if (req.method === 'POST' && failLeft > 0) {
      failLeft--;
      return json(res, 500, path.endsWith('/messages')
        ? { type: 'error', error: { type: 'api_error', message: 'recorder: injected failure' } }
        : { error: { message: 'recorder: injected failure', type: 'server_error', code: null } });
    }
    if (req.method === 'POST' && path.endsWith('/messages/count_tokens')) return json(res, 200, { input_tokens: 10 });
    if (req.method === 'POST' && path.endsWith('/messages')) return anthropic(res, parsed);
    if (req.method === 'POST' && path.endsWith('/responses')) return responses(res, parsed);
    if (req.method === 'POST' && path.endsWith('/chat/completions')) return chat(res, parsed);
    if (req.method === 'GET' && path.endsWith('/models')) {
      return json(res, 200, { object: 'list', data: [{ id: 'deepseek-v4-flash', object: 'model', owned_by: 'ds4d',
        type: 'model', display_name: 'deepseek-v4-flash', created_at: '2026-01-01T00:00:00Z' }] });
    }
    json(res, 404, { error: { message: `recorder: no route for ${req.method} ${path}`, type: 'not_found' } });
  });
});

server.listen(0, '127.0.0.1', () => {
  port = server.address().port;
  console.log(`LISTENING ${port}`);
});
process.stdin.on('end', () => server.close(() => process.exit(0)));
process.stdin.resume();
