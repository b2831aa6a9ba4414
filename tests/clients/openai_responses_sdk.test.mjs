// The official `openai` npm client's Responses API against ds4d's POST /v1/responses (issue #15
// item 8).
//
// Two gateway harnesses: the tiny DS4 model behind an API key (responses.create shape and usage,
// a streamed greedy reply equal to the non-streamed one) and a scripted engine whose reply is
// reasoning + text + a DSML tool call (responses.stream: the event lifecycle, reasoning, message
// and function_call items with live argument deltas; then the stateless round trip Codex does,
// store: false: the output items sent back with the call's output extend the live context, so
// usage reports input_tokens_details.cached_tokens and the echo contract holds). Run by ctest
// (label clients) with DS4D_GATEWAY_HARNESS and DS4D_TINY_MODEL set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { skipUnlessInstalled } from './agents.mjs';
import { SDK_KEY, useSdkHarnesses } from './servers.mjs';

skipUnlessInstalled({ packages: ['openai'] });
const { default: OpenAI } = await import('openai');

const KEY = SDK_KEY;

// A function tool plus a kind ds4d cannot run (Codex sends web_search): left out, never a 400.
const TOOLS = [
  { type: 'function', name: 'get_weather', description: 'Weather forecast',
    parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } } } },
  { type: 'web_search' },
];

const servers = useSdkHarnesses();

function client(h, apiKey = KEY) {
  return new OpenAI({ baseURL: `${h.base}/v1`, apiKey, maxRetries: 0, timeout: 120000 });
}

test('responses.create with the tiny model: shape and usage', async () => {
  const r = await client(servers.tiny).responses.create({
    model: 'deepseek-v4-flash',
    instructions: 'Be brief.',
    input: 'Hello, who are you?',
    max_output_tokens: 8,
    temperature: 0,
    reasoning: { effort: 'none' },
  });
  assert.equal(r.object, 'response');
  assert.match(r.id, /^resp_/);
  assert.ok(['completed', 'incomplete'].includes(r.status), r.status);
  const message = r.output.find((i) => i.type === 'message');
  assert.ok(message, `a message item expected in ${JSON.stringify(r.output)}`);
  assert.equal(message.content[0].type, 'output_text');
  assert.equal(r.output_text, message.content[0].text);
  assert.ok(r.usage.input_tokens > 0);
  assert.ok(r.usage.output_tokens > 0 && r.usage.output_tokens <= 8);
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
  assert.equal(typeof r.usage.input_tokens_details.cached_tokens, 'number');
});

test('responses.stream of a greedy reply equals responses.create', async () => {
  const c = client(servers.tiny);
  const request = {
    model: 'deepseek-v4-flash',
    input: [{ role: 'user', content: 'Count to five.' }],
    max_output_tokens: 10,
    temperature: 0,
    reasoning: { effort: 'none' },
  };
  const whole = await c.responses.create(request);
  const stream = c.responses.stream(request);
  const types = [];
  let text = '';
  stream.on('event', (e) => {
    types.push(e.type);
    if (e.type === 'response.output_text.delta') text += e.delta;
  });
  const final = await stream.finalResponse();
  assert.deepEqual(types.slice(0, 2), ['response.created', 'response.in_progress']);
  assert.ok(['response.completed', 'response.incomplete'].includes(types.at(-1)), types.at(-1));
  assert.equal(text, whole.output_text);
  assert.equal(final.output_text, whole.output_text);
  assert.equal(final.usage.output_tokens, whole.usage.output_tokens);
  assert.equal(final.usage.input_tokens, whole.usage.input_tokens);
});

test('responses.stream: a function call, then the stateless round trip hits the cache', async () => {
  const c = client(servers.tools);
  const input = [{ role: 'user', content: 'Weather in Paris?' }];
  const stream = c.responses.stream({
    model: 'deepseek-v4-flash', input, tools: TOOLS, store: false,
    include: ['reasoning.encrypted_content'], reasoning: { effort: 'high', summary: 'auto' },
  });
  const types = [];
  let args = '';
  stream.on('event', (e) => {
    types.push(e.type);
    if (e.type === 'response.function_call_arguments.delta') args += e.delta;
  });
  const response = await stream.finalResponse();
  assert.equal(types[0], 'response.created');
  assert.equal(types.at(-1), 'response.completed');
  assert.ok(types.includes('response.function_call_arguments.done'));
  assert.deepEqual(response.output.map((i) => i.type), ['reasoning', 'message', 'function_call']);
  const call = response.output[2];
  assert.equal(call.name, 'get_weather');
  assert.match(call.call_id, /^call_/);
  assert.deepEqual(JSON.parse(call.arguments), { city: 'Paris', days: 3 });
  assert.equal(args, call.arguments);
  assert.equal(response.output[1].content[0].text, 'Let me check.');

  // Stateless round trip, as Codex does it: the output items back plus the call's output.
  const followUp = await c.responses.create({
    model: 'deepseek-v4-flash', tools: TOOLS, store: false, reasoning: { effort: 'high' },
    input: [...input, ...response.output, { type: 'function_call_output', call_id: call.call_id, output: 'sunny' }],
  });
  assert.equal(followUp.object, 'response');
  assert.ok(followUp.usage.input_tokens_details.cached_tokens > 0, 'the echoed turn should reuse the live context');
  assert.equal(followUp.ds4d.cache.source, 'live');
  assert.equal(followUp.ds4d.contract.violations.length, 0);
  assert.equal(followUp.ds4d.contract.replayed_blocks, 1);
});

test('errors: 400 naming the field, 401 without the key', async () => {
  await assert.rejects(
    client(servers.tiny).responses.create({ model: 'm', input: [{ role: 'user', content: 5 }] }),
    (e) => e instanceof OpenAI.BadRequestError && /input\[0\]/.test(`${e.param ?? ''} ${e.message}`));
  await assert.rejects(client(servers.tiny, 'wrong').responses.create({ model: 'm', input: 'x' }),
    (e) => e instanceof OpenAI.AuthenticationError);
});
