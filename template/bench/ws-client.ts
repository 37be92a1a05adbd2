// WebSocket stream load: CLIENTS WebSocket connections (Node's built-in client, one socket each), each
// one streaming call, counting the `{"result"}` frames delivered while all are connected, for SECONDS.
// REQUEST is sent once when the socket opens (a server stream), or every EVERY_MS (a bidi call such as
// Chat). Prints one JSON line. An error is a socket that fails to open, an `{"error"}` frame, or a close
// before the client closes it.
const [url, protocol, request, clientsArg, secondsArg, everyArg] = process.argv.slice(2);
if (!url || !protocol || !request || !clientsArg || !secondsArg)
  throw new Error("usage: ws-client.ts URL PROTOCOL REQUEST CLIENTS SECONDS [EVERY_MS]");
const clients = Number(clientsArg);
const seconds = Number(secondsArg);
const every = Number(everyArg ?? 0);
const timers: NodeJS.Timeout[] = [];

let connected = 0;
let messages = 0;
let counting = false;
let closing = false;
const errors: Record<string, number> = {};
const sockets: WebSocket[] = [];
const error = (kind: string) => {
  if (!closing) errors[kind] = (errors[kind] ?? 0) + 1;
};

const opened = new Promise<void>((resolveAll) => {
  let settled = 0;
  const settle = () => {
    if (++settled === clients) resolveAll();
  };
  for (let i = 0; i < clients; i++) {
    const ws = new WebSocket(url, [protocol]);
    let open = false;
    ws.onopen = () => {
      open = true;
      connected++;
      ws.send(request);
      if (every > 0) timers.push(setInterval(() => ws.readyState === WebSocket.OPEN && ws.send(request), every));
      settle();
    };
    ws.onmessage = (e) => {
      const data = String(e.data);
      if (data.startsWith('{"result"')) {
        if (counting) messages++;
      } else if (data.startsWith('{"error"')) error("error frame");
      else error("stream ended early");
    };
    ws.onerror = () => {
      if (!open) settle();
      error(open ? "socket error" : "open failed");
    };
    ws.onclose = () => error("closed early");
    sockets.push(ws);
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
for (const timer of timers) clearInterval(timer);
for (const ws of sockets) ws.close(1000);
const errorCount = Object.values(errors).reduce((a, b) => a + b, 0);
process.stdout.write(
  `${JSON.stringify({ clients, connected, connectMs, seconds: elapsed, messages, perSecond: messages / elapsed, errors: errorCount, errorKinds: errors })}\n`,
);
process.exit(0);
