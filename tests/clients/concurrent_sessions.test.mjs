// Four Anthropic SDK sessions at once against one ds4d daemon with four slots (issue #32 item 4,
// docs/batching.md §scheduler): every session's two turns complete, each reply (streamed for two
// of them) is what the same session gets when the sessions run one after another, the daemon's
// metrics show engine steps that several sessions shared, and /health shows the slots. Run by
// ctest (label clients) with DS4D_DAEMON and DS4D_AGENT_MODEL set.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { skipUnlessInstalled } from './agents.mjs';
import { startDaemon } from './servers.mjs';

skipUnlessInstalled({ packages: ['@anthropic-ai/sdk'] });
const { default: Anthropic } = await import('@anthropic-ai/sdk');

const SESSIONS = 4;
let daemon;

before(async () => {
  daemon = await startDaemon(process.env.DS4D_AGENT_MODEL, ['--max-batch', String(SESSIONS)]);
});
after(async () => {
  if (daemon) await daemon.stop();
});

// One session: two greedy turns, the second extending the first; sessions 2 and 3 stream.
async function session(i) {
  const client = new Anthropic({ baseURL: daemon.base, apiKey: daemon.key, maxRetries: 0, timeout: 300000 });
  const messages = [{ role: 'user', content: `Session ${i}: name ${i + 2} animals that live in rivers.` }];
  const replies = [];
  for (let turn = 0; turn < 2; turn++) {
    const request = { model: 'deepseek-v4-flash', max_tokens: 24, temperature: 0, thinking: { type: 'disabled' },
      messages };
    const message = i >= 2 ? await client.messages.stream(request).finalMessage()
      : await client.messages.create(request);
    assert.equal(message.type, 'message');
    const text = message.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
    replies.push(text);
    messages.push({ role: 'assistant', content: text });
    messages.push({ role: 'user', content: 'And which of them is the largest?' });
  }
  return replies;
}

async function metricsText() {
  return fetch(`${daemon.base}/metrics`, { headers: { Authorization: `Bearer ${daemon.key}` } })
    .then((r) => r.text());
}

function sample(text, series) {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

test('four SDK sessions at once share engine steps and each gets what it gets alone', async () => {
  const health = await fetch(`${daemon.base}/health`).then((r) => r.json());
  assert.equal(health.sessions?.max, SESSIONS, JSON.stringify(health));

  const together = await Promise.all([...Array(SESSIONS).keys()].map(session));
  const m = await metricsText();
  const shared = sample(m, 'ds4d_batch_sequences_count') - sample(m, 'ds4d_batch_sequences_bucket{le="1"}');
  assert.ok(shared > 0, `no engine step held more than one session:\n${daemon.log()}`);

  const alone = [];
  for (let i = 0; i < SESSIONS; i++) alone.push(await session(i));
  for (let i = 0; i < SESSIONS; i++) {
    assert.equal(together[i].length, 2);
    assert.ok(together[i][0].length > 0, `session ${i} replied nothing`);
    assert.deepEqual(together[i], alone[i], `session ${i}: the concurrent replies differ from the sequential ones`);
  }
});
