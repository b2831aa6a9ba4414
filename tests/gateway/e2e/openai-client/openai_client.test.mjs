// The official `openai` npm client against ds4d's gateway (tests/gateway/gateway_harness).
//
// Three harnesses: the tiny DS4 model behind an API key (chat, streaming, usage, errors, auth),
// a scripted engine whose reply is reasoning + content + a DSML tool call (reasoning and
// tool-call deltas, then the echo of that turn: prefix-cache hit, no contract violation), and a
// slow scripted engine with a one-job queue (429). Run by ctest with DS4D_GATEWAY_HARNESS and
// DS4D_TINY_MODEL set.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import OpenAI from 'openai';

const HARNESS = process.env.DS4D_GATEWAY_HARNESS;
const MODEL = process.env.DS4D_TINY_MODEL;
const KEY = 'test-key';

const TOOL_REPLY =
  'The user wants the weather.</think>Let me check.\n\n<｜DSML｜tool_calls>\n' +
  '<｜DSML｜invoke name="get_weather">\n' +
  '<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n' +
  '<｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>\n' +
  '</｜DSML｜invoke>\n</｜DSML｜tool_calls>';

const TOOLS = [{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather forecast',
    parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } } },
  },
}];

function startHarness(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(HARNESS, args, { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = createInterface({ input: child.stdout });
    let port = null;
    lines.on('line', (line) => {
      if (line.startsWith('LISTENING ')) port = Number(line.slice(10));
      if (line === 'READY') resolve({ child, base: `http://127.0.0.1:${port}` });
    });
    child.on('exit', (code) => reject(new Error(`harness ${args.join(' ')} exited with ${code}`)));
  });
}

let tiny, tools, slow;

before(async () => {
  assert.ok(HARNESS, 'DS4D_GATEWAY_HARNESS must point at gateway_harness');
  assert.ok(MODEL, 'DS4D_TINY_MODEL must point at a tiny DS4 GGUF');
  [tiny, tools, slow] = await Promise.all([
    startHarness(['--model', MODEL, '--api-key', KEY, '--ctx', '2048']),
    startHarness(['--scripted', TOOL_REPLY]),
    startHarness(['--scripted', 'x'.repeat(400), '--scripted-delay-ms', '20', '--queue', '1']),
  ]);
});

after(() => {
  for (const h of [tiny, tools, slow]) if (h) h.child.stdin.end();
});

function client(h, apiKey = KEY) {
  return new OpenAI({ baseURL: `${h.base}/v1`, apiKey, maxRetries: 0, timeout: 120000 });
}

test('models list shows the loaded model', async () => {
  const models = await client(tiny).models.list();
  assert.equal(models.data.length, 1);
  assert.equal(models.data[0].object, 'model');
});

test('chat completion with the tiny model: shape and usage', async () => {
  const r = await client(tiny).chat.completions.create({
    model: 'deepseek-v4-flash',
    messages: [{ role: 'user', content: 'Hello, who are you?' }],
    max_tokens: 8,
    temperature: 0,
    thinking: false,
  });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.model, 'deepseek-v4-flash');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.ok(r.usage.prompt_tokens > 0);
  assert.ok(r.usage.completion_tokens >= 1 && r.usage.completion_tokens <= 8);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  assert.ok(r.usage.protocol_tokens > 0 && r.usage.protocol_tokens < r.usage.prompt_tokens);
  assert.equal(typeof r.ds4d.cache.source, 'string');
});

test('streamed greedy chat equals the non-streamed one, with a usage chunk', async () => {
  const c = client(tiny);
  const request = {
    model: 'm',
    messages: [{ role: 'user', content: 'Count to five.' }],
    max_tokens: 12,
    temperature: 0,
    thinking: false,
  };
  const whole = await c.chat.completions.create(request);
  const stream = await c.chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } });
  let text = '';
  let finish = null;
  let usage = null;
  let first = true;
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    if (first) {
      assert.equal(chunk.choices[0].delta.role, 'assistant');
      first = false;
    }
    if (chunk.usage) usage = chunk.usage;
    if (chunk.choices.length === 0) continue;
    text += chunk.choices[0].delta.content ?? '';
    if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
  }
  assert.equal(text, whole.choices[0].message.content);
  assert.equal(finish, whole.choices[0].finish_reason);
  assert.ok(usage, 'usage chunk expected with include_usage');
  assert.equal(usage.completion_tokens, whole.usage.completion_tokens);
  assert.equal(usage.prompt_tokens, whole.usage.prompt_tokens);
});

test('legacy completions and tokenizer endpoints', async () => {
  const c = client(tiny);
  const r = await c.completions.create({ model: 'm', prompt: 'The sky is', max_tokens: 4, temperature: 0, raw: true });
  assert.equal(r.object, 'text_completion');
  assert.equal(r.usage.protocol_tokens, 0);
  const tok = await fetch(`${tiny.base}/tokenize`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ content: 'The sky is' }),
  }).then((x) => x.json());
  assert.equal(tok.tokens.length, r.usage.prompt_tokens);
});

test('streamed reasoning and tool-call deltas, then the echoed turn hits the cache cleanly', async () => {
  const c = client(tools);
  const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];
  const stream = await c.chat.completions.create({
    model: 'm', messages, tools: TOOLS, stream: true, stream_options: { include_usage: true },
  });
  let reasoning = '';
  let content = '';
  const calls = [];
  let finish = null;
  for await (const chunk of stream) {
    if (chunk.choices.length === 0) continue;
    const d = chunk.choices[0].delta;
    reasoning += d.reasoning_content ?? '';
    content += d.content ?? '';
    for (const tc of d.tool_calls ?? []) {
      if (tc.id) calls[tc.index] = { id: tc.id, type: 'function', function: { name: tc.function.name, arguments: '' } };
      calls[tc.index].function.arguments += tc.function?.arguments ?? '';
    }
    if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
  }
  assert.equal(reasoning, 'The user wants the weather.');
  assert.equal(content, 'Let me check.');
  assert.equal(finish, 'tool_calls');
  assert.equal(calls.length, 1);
  assert.match(calls[0].id, /^call_[0-9a-f]{32}$/);
  assert.equal(calls[0].function.name, 'get_weather');
  assert.deepEqual(JSON.parse(calls[0].function.arguments), { city: 'Paris', days: 3 });

  // The client echoes the turn (re-serializing the arguments its own way) plus the tool result.
  const followUp = await c.chat.completions.create({
    model: 'm',
    tools: TOOLS,
    messages: [
      ...messages,
      { role: 'assistant', content, reasoning_content: reasoning,
        tool_calls: calls.map((x) => ({ ...x, function: { ...x.function, arguments: JSON.stringify(JSON.parse(x.function.arguments), null, 2) } })) },
      { role: 'tool', tool_call_id: calls[0].id, content: '{"forecast":"sunny"}' },
    ],
  });
  assert.ok(followUp.usage.prompt_tokens_details.cached_tokens > 0, 'the echoed turn should reuse the live context');
  assert.equal(followUp.ds4d.cache.source, 'live');
  assert.equal(followUp.ds4d.contract.violations.length, 0);
  assert.equal(followUp.ds4d.contract.replayed_blocks, 1);
  // Non-streamed tool calls come back whole.
  assert.equal(followUp.choices[0].finish_reason, 'tool_calls');
  assert.equal(followUp.choices[0].message.tool_calls[0].function.name, 'get_weather');
});

test('errors: 400 names the field, 401 without the key', async () => {
  await assert.rejects(
    client(tiny).chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 1 }] }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === 'messages[0].content');
  await assert.rejects(
    client(tiny).chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], temperature: -1 }),
    (e) => e.status === 400 && e.param === 'temperature');
  await assert.rejects(client(tiny, 'wrong-key').models.list(),
    (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
  // Health is public.
  const health = await fetch(`${tiny.base}/health`);
  assert.equal(health.status, 200);
  assert.deepEqual(await health.json(), { status: 'ok', sessions: { active: 0, max: 1, queued: 0 } });
});

test('a full queue answers 429 with Retry-After', async () => {
  const c = client(slow);
  const long = { model: 'm', messages: [{ role: 'user', content: 'go' }], thinking: false };
  const running = c.chat.completions.create({ ...long, stream: true });
  const first = await running;  // headers arrived: the worker is busy with it
  // Two more while the worker is busy: the queue holds one, the other is refused at once.
  const settled = [0, 1].map(() => c.chat.completions.create({ ...long, max_tokens: 2 })
    .then((ok) => ({ ok }), (err) => ({ err })));
  const firstSettled = await Promise.race(settled);
  const refused = firstSettled.err;
  assert.ok(refused instanceof OpenAI.RateLimitError, `expected a 429, got ${refused ?? 'a response'}`);
  assert.equal(refused.status, 429);
  assert.equal(refused.headers.get('retry-after'), '2');
  first.controller.abort();  // disconnecting cancels the long generation, freeing the worker
  const outcomes = await Promise.all(settled);
  const served = outcomes.filter((o) => o.ok);
  assert.equal(served.length, 1);
  assert.equal(served[0].ok.choices[0].message.content, 'xx');
});
