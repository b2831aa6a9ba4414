// Keep-alive chat client on Node's built-in fetch (undici pools and reuses connections by
// default), for ds4d-load --side. Alternates streamed and non-streamed chat completions until
// DS4D_LOAD_SECONDS have passed; a request is dropped when fetch throws (no response, reset) or
// the body is cut (a stream without [DONE]). The last line printed is the JSON summary.
const url = new URL(process.env.DS4D_LOAD_URL ?? 'http://127.0.0.1:8080');
const seconds = Number(process.env.DS4D_LOAD_SECONDS ?? 30);
const maxTokens = Number(process.env.DS4D_LOAD_MAX_TOKENS ?? 8);
const timeoutMs = Number(process.env.DS4D_LOAD_TIMEOUT ?? 120) * 1000;
if (!['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname)) {
  console.error(`node_fetch: loopback only, not ${url.hostname}`);
  process.exit(2);
}
const deadline = Date.now() + seconds * 1000;
const counts = { client: 'node-fetch', requests: 0, completed: 0, dropped: 0, connections: 0, statuses: {}, drops: [] };
const drop = (why) => { counts.dropped++; if (counts.drops.length < 4) counts.drops.push(why); };
for (let i = 0; Date.now() < deadline; i++) {
  const stream = i % 2 === 0;
  counts.requests++;
  let res, text;
  try {
    res = await fetch(new URL('/v1/chat/completions', url), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: maxTokens, stream }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    text = await res.text();
  } catch (e) {
    drop(`${e.name}: ${e.cause?.code ?? e.message}`);
    await new Promise((r) => setTimeout(r, 200));  // the daemon may be restarting: do not spin
    continue;
  }
  counts.statuses[res.status] = (counts.statuses[res.status] ?? 0) + 1;
  if (res.status === 200) {
    let ok;
    if (stream) ok = text.trimEnd().endsWith('data: [DONE]') && text.includes('"finish_reason":"');
    else { try { ok = 'choices' in JSON.parse(text); } catch { ok = false; } }
    if (ok) counts.completed++; else drop(`incomplete 200 body: ${text.slice(-80)}`);
  } else if (res.status === 429 || res.status === 503) {
    await new Promise((r) => setTimeout(r, 250));
  }
}
// undici does not expose its pool; connections are not counted here (0).
console.log(JSON.stringify(counts));
