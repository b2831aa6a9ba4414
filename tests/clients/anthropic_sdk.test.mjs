// The official @anthropic-ai/sdk against ds4d's POST /v1/messages (issue #15 item 8).
//
// Two gateway harnesses: the tiny DS4 model behind an API key (messages.create shape and usage,
// x-api-key auth, a streamed greedy reply equal to the non-streamed one, thinking on and off,
// errors in the Anthropic shape) and a scripted engine whose reply is reasoning + text + a DSML
// tool call (messages.stream: thinking, text and tool_use blocks with live input_json_delta; then
// the tool round trip: the turn sent back as the SDK returned it, thinking block included, plus a
// tool_result extends the live context, so usage reports cache_read_input_tokens and the echo
// contract holds). Run by ctest (label clients) with DS4D_GATEWAY_HARNESS and DS4D_TINY_MODEL set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { skipUnlessInstalled } from './agents.mjs';
import { SDK_KEY, useSdkHarnesses } from './servers.mjs';

skipUnlessInstalled({ packages: ['@anthropic-ai/sdk'] });
const { default: Anthropic } = await import('@anthropic-ai/sdk');

const KEY = SDK_KEY;

const TOOLS = [{
  name: 'get_weather',
  description: 'Weather forecast',
  input_schema: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } } },
}];

const servers = useSdkHarnesses();

function client(h, apiKey = KEY) {
  return new Anthropic({ baseURL: h.base, apiKey, maxRetries: 0, timeout: 120000 });
}

test('messages.create with the tiny model: shape and usage', async () => {
  const r = await client(servers.tiny).messages.create({
    model: 'deepseek-v4-flash',
    max_tokens: 8,
    temperature: 0,
    thinking: { type: 'disabled' },
    system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
    messages: [{ role: 'user', content: 'Hello, who are you?' }],
  });
  assert.equal(r.type, 'message');
  assert.equal(r.role, 'assistant');
  assert.equal(r.model, 'deepseek-v4-flash');
  assert.match(r.id, /^msg_/);
  assert.ok(['end_turn', 'max_tokens'].includes(r.stop_reason), r.stop_reason);
  assert.equal(r.content[0].type, 'text');
  assert.ok(r.usage.input_tokens > 0);
  assert.ok(r.usage.output_tokens > 0 && r.usage.output_tokens <= 8);
  assert.equal(typeof r.usage.cache_read_input_tokens, 'number');
});

test('messages.stream of a greedy reply equals messages.create, event by event', async () => {
  const c = client(servers.tiny);
  const request = {
    model: 'deepseek-v4-flash',
    max_tokens: 10,
    temperature: 0,
    thinking: { type: 'disabled' },
    messages: [{ role: 'user', content: 'Count to five.' }],
  };
  const whole = await c.messages.create(request);
  const stream = c.messages.stream(request);
  const kinds = [];
  let text = '';
  stream.on('streamEvent', (e) => {
    kinds.push(e.type);
    if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') text += e.delta.text;
  });
  const message = await stream.finalMessage();
  assert.equal(kinds[0], 'message_start');
  assert.equal(kinds.at(-1), 'message_stop');
  assert.ok(kinds.includes('message_delta'));
  assert.equal(text, whole.content.map((b) => b.text ?? '').join(''));
  assert.deepEqual(message.content, whole.content);
  assert.equal(message.stop_reason, whole.stop_reason);
  assert.equal(message.usage.output_tokens, whole.usage.output_tokens);
  // Anthropic's input_tokens leaves out the cache reads: the resent prompt may hit the cache.
  const prompt = (u) => u.input_tokens + (u.cache_read_input_tokens ?? 0);
  assert.equal(prompt(message.usage), prompt(whole.usage));
});

test('thinking enabled on the tiny model: a thinking block first, with a signature', async () => {
  const r = await client(servers.tiny).messages.create({
    model: 'deepseek-v4-flash',
    max_tokens: 12,
    temperature: 0,
    thinking: { type: 'enabled', budget_tokens: 1024 },
    messages: [{ role: 'user', content: 'What is 2 + 2?' }],
  });
  assert.ok(r.content.length >= 1);
  assert.equal(r.content[0].type, 'thinking');
  assert.equal(typeof r.content[0].thinking, 'string');
  assert.equal(typeof r.content[0].signature, 'string');
});

test('messages.stream: thinking, text and a live tool_use, then the round trip hits the cache', async () => {
  const c = client(servers.tools);
  const request = {
    model: 'deepseek-v4-flash',
    max_tokens: 400,
    thinking: { type: 'enabled', budget_tokens: 1024 },
    tools: TOOLS,
    messages: [{ role: 'user', content: 'Weather in Paris?' }],
  };
  const stream = c.messages.stream(request);
  const kinds = [];
  let partialJson = '';
  stream.on('streamEvent', (event) => {
    kinds.push(event.type);
    if (event.type === 'content_block_delta' && event.delta.type === 'input_json_delta') {
      partialJson += event.delta.partial_json;
    }
  });
  const message = await stream.finalMessage();
  assert.equal(kinds[0], 'message_start');
  assert.equal(kinds.at(-1), 'message_stop');
  assert.equal(message.stop_reason, 'tool_use');
  assert.deepEqual(message.content.map((b) => b.type), ['thinking', 'text', 'tool_use']);
  assert.equal(message.content[0].thinking, 'The user wants the weather.');
  assert.equal(message.content[1].text, 'Let me check.');
  const use = message.content[2];
  assert.match(use.id, /^(toolu|call)_[0-9A-Za-z]+$/);
  assert.equal(use.name, 'get_weather');
  assert.deepEqual(use.input, { city: 'Paris', days: 3 });
  assert.deepEqual(JSON.parse(partialJson), { city: 'Paris', days: 3 });

  // The round trip: the turn as the SDK returned it (thinking block included) plus the result.
  const followUp = await c.messages.create({
    ...request,
    messages: [
      ...request.messages,
      { role: 'assistant', content: message.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny, 21 C' }] },
    ],
  });
  assert.ok(followUp.usage.cache_read_input_tokens > 0, 'the echoed turn should reuse the live context');
  assert.equal(followUp.ds4d.cache.source, 'live');
  assert.equal(followUp.ds4d.contract.violations.length, 0);
  assert.equal(followUp.ds4d.contract.replayed_blocks, 1);
});

test('errors: 400 in the Anthropic shape naming the field, 401 with a wrong x-api-key', async () => {
  await assert.rejects(
    client(servers.tiny).messages.create({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 5 }] }),
    (e) => e instanceof Anthropic.BadRequestError && e.error.type === 'error' &&
      e.error.error.type === 'invalid_request_error' && /messages\[0\]\.content/.test(e.error.error.message));
  await assert.rejects(
    client(servers.tiny, 'wrong').messages.create({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof Anthropic.AuthenticationError);
});
