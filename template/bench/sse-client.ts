// EventSource-style load: CLIENTS HTTP/1.1 connections (one socket each) holding a stream open with
// `Accept: text/event-stream`, counting the messages delivered while all are connected, for SECONDS.
// Prints one JSON line. An error is a failed connection, a status other than 200, a stream that ends
// or breaks before the client closes it, or an `event: error` frame.
import http from "node:http";

const [url, clientsArg, secondsArg] = process.argv.slice(2);
if (!url || !clientsArg || !secondsArg) throw new Error("usage: sse-client.ts URL CLIENTS SECONDS");
const clients = Number(clientsArg);
const seconds = Number(secondsArg);

let connected = 0;
let messages = 0;
let counting = false;
let closing = false;
const errors: Record<string, number> = {};
const contentTypes = new Set<string>();
const requests: http.ClientRequest[] = [];
const error = (kind: string) => {
  if (!closing) errors[kind] = (errors[kind] ?? 0) + 1;
};

const opened = new Promise<void>((resolveAll) => {
  let settled = 0;
  const settle = () => {
    if (++settled === clients) resolveAll();
  };
  for (let i = 0; i < clients; i++) {
    const req = http.get(url, { agent: false, headers: { accept: "text/event-stream" } }, (res) => {
      contentTypes.add(String(res.headers["content-type"]));
      if (res.statusCode !== 200) {
        error(`status ${res.statusCode}`);
        res.resume();
        settle();
        return;
      }
      connected++;
      settle();
      res.setEncoding("utf8");
      let rest = "";
      res.on("data", (chunk: string) => {
        // One message per SSE frame (`data: …` then a blank line) or NDJSON line.
        const text = rest + chunk;
        let start = 0;
        for (let end = text.indexOf("\n", start); end !== -1; end = text.indexOf("\n", start)) {
          const line = text.slice(start, end);
          start = end + 1;
          if (line.startsWith("data:") || line.startsWith('{"result"')) {
            if (line.includes('"error"')) error("error frame");
            else if (counting) messages++;
          } else if (line.startsWith("event: error")) error("error frame");
        }
        rest = text.slice(start);
      });
      res.on("end", () => error("stream ended early"));
      res.on("error", () => error("stream broken"));
    });
    req.on("error", (err: NodeJS.ErrnoException) => {
      error(err.code ?? "request error");
      settle();
    });
    requests.push(req);
  }
});

const t0 = performance.now();
await opened;
const connectMs = performance.now() - t0;
counting = true;
const start = performance.now();
await new Promise((r) => setTimeout(r, seconds * 1000));
counting = false;
const elapsed = (performance.now() - start) / 1000;
closing = true;
for (const req of requests) req.destroy();
const errorCount = Object.values(errors).reduce((a, b) => a + b, 0);
process.stdout.write(
  `${JSON.stringify({ clients, connected, connectMs, seconds: elapsed, messages, perSecond: messages / elapsed, errors: errorCount, errorKinds: errors, contentTypes: [...contentTypes] })}\n`,
);
process.exit(0);
