// A logging relay between a coding agent and ds4d, both on 127.0.0.1: every request is passed on
// unchanged and its answer streamed back unchanged, while the relay keeps what the end-to-end
// test asserts on: the path, the status, the request body (parsed) and the head of the answer
// (at most 64 KiB, enough to find error events in a stream). Nothing is rewritten, so the
// daemon sees exactly what the agent sends.
import { createServer, request as httpRequest } from 'node:http';

const KEEP_ANSWER_BYTES = 64 * 1024;

// Resolves {base, exchanges, close()}; exchanges grows by one {method, path, status, body,
// answer} per finished request.
export function startRelay(target) {
  const upstream = new URL(target);
  const exchanges = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      let body = null;
      try {
        body = raw.length ? JSON.parse(raw.toString('utf8')) : null;
      } catch {
        body = { unparsed: raw.toString('utf8').slice(0, 2000) };
      }
      const exchange = { method: req.method, path: req.url, status: 0, body, answer: '' };
      const headers = { ...req.headers, host: upstream.host };
      const up = httpRequest({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers },
        (upRes) => {
          exchange.status = upRes.statusCode;
          res.writeHead(upRes.statusCode, upRes.headers);
          upRes.on('data', (d) => {
            if (exchange.answer.length < KEEP_ANSWER_BYTES) exchange.answer += d.toString('utf8');
            res.write(d);
          });
          upRes.on('end', () => {
            exchanges.push(exchange);
            res.end();
          });
        });
      up.on('error', (err) => {
        exchange.status = 502;
        exchange.answer = `relay: ${err.message}`;
        exchanges.push(exchange);
        res.writeHead(502).end();
      });
      up.end(raw);
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({
        base: `http://127.0.0.1:${server.address().port}`,
        exchanges,
        close: () => new Promise((r) => {
          server.closeAllConnections();
          server.close(r);
        }),
      });
    });
  });
}
