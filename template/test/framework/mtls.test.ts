/**
 * mTLS on the gRPC port (GRPC_TLS_CLIENT_CA_FILE, GRPC_TLS_CLIENT_AUTH) with certificates made by openssl for the
 * test: a client certificate from the configured CA passes and its identity (subject, SANs, SPIFFE ID) reaches the
 * call context and the log; one from another CA, or none, is refused; the certificate, key and CA files are replaced
 * during a bounded load without a failed call, and new connections see the new certificate.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { once } from "node:events";
import { copyFileSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { connect as tlsConnect } from "node:tls";
import { credentials } from "@grpc/grpc-js";
import { type PeerIdentity, peerIdentity } from "../../src/framework/call/peer.js";
import { Code, createClient, defineService } from "../../src/framework/index.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";

let dir: string;
const file = (name: string) => join(dir, name);
const openssl = (...args: string[]) => execFileSync("openssl", args, { stdio: ["ignore", "ignore", "pipe"] });
const P256 = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

function ca(stem: string): void {
  openssl(
    "req",
    "-x509",
    ...P256,
    "-days",
    "2",
    "-subj",
    `/CN=${stem} test CA`,
    "-keyout",
    file(`${stem}.key`),
    "-out",
    file(`${stem}.crt`),
  );
}

/** A leaf signed by `issuer`, with its subject, SANs and extended key usage. */
function leaf(stem: string, issuer: string, subject: string, san: string, usage: "serverAuth" | "clientAuth"): void {
  openssl("req", "-new", ...P256, "-subj", subject, "-keyout", file(`${stem}.key`), "-out", file(`${stem}.csr`));
  writeFileSync(file(`${stem}.ext`), `subjectAltName=${san}\nextendedKeyUsage=${usage}\n`);
  openssl(
    "x509",
    "-req",
    "-in",
    file(`${stem}.csr`),
    "-CA",
    file(`${issuer}.crt`),
    "-CAkey",
    file(`${issuer}.key`),
    "-set_serial",
    `0x${Buffer.from(stem).toString("hex")}`,
    "-days",
    "2",
    "-extfile",
    file(`${stem}.ext`),
    "-out",
    file(`${stem}.crt`),
  );
}

const SPIFFE = "spiffe://acme.test/ns/prod/sa/orders";

before(() => {
  dir = mkdtempSync(join(tmpdir(), "mtls-test-"));
  ca("ca1");
  ca("ca2");
  leaf("server", "ca1", "/CN=localhost", "DNS:localhost,IP:127.0.0.1", "serverAuth");
  leaf("server-next", "ca1", "/CN=localhost", "DNS:localhost,IP:127.0.0.1", "serverAuth");
  leaf("client", "ca1", "/CN=orders/O=Acme", `DNS:orders.internal,URI:${SPIFFE}`, "clientAuth");
  leaf("client-ca2", "ca2", "/CN=mallory/O=Elsewhere", "DNS:mallory.internal", "clientAuth");
  // The files the server reads: copies, replaced during the rotation test.
  for (const name of ["server.crt", "server.key"]) copyFileSync(file(name), file(`live-${name}`));
  copyFileSync(file("ca1.crt"), file("live-ca.crt"));
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** Echo answers with the caller's identity as the server saw it, as JSON. */
const whoAmI = defineService(FixtureService, {
  handlers: { ...fixtureService.handlers, echo: (_req, ctx) => ({ message: JSON.stringify(ctx.peer ?? null) }) },
});

function client(server: TestServer, clientStem: string | undefined, caStem = "ca1") {
  const key = clientStem ? readFileSync(file(`${clientStem}.key`)) : null;
  const cert = clientStem ? readFileSync(file(`${clientStem}.crt`)) : null;
  return createClient(FixtureService, server.grpcAddress, {
    credentials: credentials.createSsl(readFileSync(file(`${caStem}.crt`)), key, cert),
    channelOptions: { "grpc.ssl_target_name_override": "localhost" },
    maxAttempts: 1,
  });
}

async function identity(server: TestServer, clientStem: string | undefined): Promise<PeerIdentity | null | { code: number }> {
  const c = client(server, clientStem);
  try {
    return JSON.parse((await c.echo({ message: "who" })).message) as PeerIdentity | null;
  } catch (err) {
    return { code: (err as { code: number }).code };
  } finally {
    c.close();
  }
}

/** The serial number of the certificate the gRPC port serves to a new connection. */
async function servedSerial(server: TestServer): Promise<string> {
  const [host, port] = server.grpcAddress.split(":");
  const socket = tlsConnect({
    host,
    port: Number(port),
    servername: "localhost",
    ca: readFileSync(file("ca1.crt")),
    cert: readFileSync(file("client.crt")),
    key: readFileSync(file("client.key")),
    ALPNProtocols: ["h2"],
  });
  await once(socket, "secureConnect");
  const serial = socket.getPeerCertificate().serialNumber;
  socket.destroy();
  return serial;
}

const env = (auth: "require" | "optional", extra: Record<string, string> = {}) => ({
  GRPC_TLS_CERT_FILE: file("live-server.crt"),
  GRPC_TLS_KEY_FILE: file("live-server.key"),
  GRPC_TLS_CLIENT_CA_FILE: file("live-ca.crt"),
  GRPC_TLS_CLIENT_AUTH: auth,
  ...extra,
});

describe("mTLS, GRPC_TLS_CLIENT_AUTH=require", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer([whoAmI], env("require"));
  });
  after(() => server.close());

  test("a client certificate from the configured CA passes; its identity is on the call context and in the log", async () => {
    const peer = await identity(server, "client");
    assert.ok(peer && !("code" in peer));
    assert.equal(peer.spiffeId, SPIFFE);
    assert.deepEqual(peer.dnsNames, ["orders.internal"]);
    assert.deepEqual(peer.uris, [SPIFFE]);
    assert.match(peer.subject, /CN=orders/);
    assert.match(peer.subject, /O=Acme/);
    assert.equal(peer.serialNumber.toUpperCase(), Buffer.from("client").toString("hex").toUpperCase());
    const line = server.logs.find((l) => l.msg === "response time" && l.grpcMethod === "/fixture.v1.FixtureService/Echo");
    assert.equal(line?.peer, SPIFFE, "the response-time line names the caller");
  });

  test("a certificate from another CA, or none, is refused (UNAVAILABLE: the handshake fails)", async () => {
    assert.deepEqual(await identity(server, "client-ca2"), { code: Code.UNAVAILABLE });
    assert.deepEqual(await identity(server, undefined), { code: Code.UNAVAILABLE });
  });

  test("the HTTP gateway still serves: with a required client certificate its calls enter the chain in process", async () => {
    const res = await fetch(`${server.httpUrl}/api/v1/echo`, {
      method: "POST",
      body: '{"message":"hi"}',
      headers: { "content-type": "application/json" },
    });
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as { message: string }).message, "null", "no client certificate over HTTP: no peer");
  });

  test("an authorize override decides by the peer identity", async () => {
    const spiffeOnly = defineService(FixtureService, {
      handlers: fixtureService.handlers,
      authorize: (ctx) => ctx.peer?.spiffeId === SPIFFE,
    });
    const other = await startTestServer([spiffeOnly], env("optional"));
    try {
      const allowed = client(other, "client");
      assert.equal((await allowed.echo({ message: "hi" })).message, "hi");
      allowed.close();
      const anonymous = client(other, undefined);
      await assert.rejects(anonymous.echo({ message: "hi" }), (err: { code: number }) => err.code === Code.UNAUTHENTICATED);
      anonymous.close();
    } finally {
      await other.close();
    }
  });
});

describe("mTLS, GRPC_TLS_CLIENT_AUTH=optional", () => {
  test("calls without a certificate pass without an identity; a certificate from another CA gives none either", async () => {
    const server = await startTestServer([whoAmI], env("optional", { GATEWAY_MODE: "tcp" }));
    try {
      assert.equal(await identity(server, undefined), null);
      assert.equal(await identity(server, "client-ca2"), null);
      assert.equal(((await identity(server, "client")) as PeerIdentity).spiffeId, SPIFFE);
      const res = await fetch(`${server.httpUrl}/api/v1/echo`, {
        method: "POST",
        body: '{"message":"hi"}',
        headers: { "content-type": "application/json" },
      });
      assert.equal(res.status, 200, "the gateway's TLS hop needs no client certificate");
    } finally {
      await server.close();
    }
  });
});

describe("rotation of the certificate, key and CA files", () => {
  test("replacing the files during a bounded load fails no call; new connections see the new certificate", async () => {
    for (const name of ["server.crt", "server.key"]) copyFileSync(file(name), file(`live-${name}`));
    copyFileSync(file("ca1.crt"), file("live-ca.crt"));
    const server = await startTestServer([whoAmI], env("optional", { GATEWAY_MODE: "tcp", TLS_FILES_CHECK_SECONDS: "0.05" }));
    const reloads = () => server.logs.filter((l) => l.msg === "gRPC TLS files reloaded").length;
    try {
      const before = await servedSerial(server);
      assert.equal(before.toUpperCase(), Buffer.from("server").toString("hex").toUpperCase());
      let calls = 0;
      const failures: unknown[] = [];
      let rotating = true;
      // Bounded load: 4 long-lived connections, a new connection and a gateway call per round, for at least 50 rounds
      // and until the rotation is over (at most 20 s).
      const steady = Array.from({ length: 4 }, () => client(server, "client"));
      const load = (async () => {
        const deadline = Date.now() + 20_000;
        for (let round = 0; (rotating || round < 50) && Date.now() < deadline; round++) {
          const fresh = client(server, "client");
          const results = await Promise.allSettled([
            ...steady.map((c) => c.echo({ message: "load" })),
            fresh.echo({ message: "new connection" }),
            fetch(`${server.httpUrl}/api/v1/echo`, {
              method: "POST",
              body: '{"message":"hi"}',
              headers: { "content-type": "application/json" },
            }).then((r) => {
              if (r.status !== 200)
                return r.text().then((t) => Promise.reject(new Error(`HTTP ${r.status} ${t} (round ${calls / 6}, reloads ${reloads()})`)));
            }),
          ]);
          fresh.close();
          calls += results.length;
          for (const r of results) if (r.status === "rejected") failures.push(r.reason);
        }
      })();
      // The new certificate first, then its key, each by rename (as a Secret volume or cert-manager's writer does):
      // in between, the files do not match and the previous pair stays in use.
      const swap = (from: string, to: string) => {
        copyFileSync(file(from), file(`${to}.tmp`));
        renameSync(file(`${to}.tmp`), file(to));
      };
      swap("server-next.crt", "live-server.crt");
      while (!server.logs.some((l) => l.msg === "gRPC TLS files changed but cannot be used: the previous ones stay in use"))
        await new Promise((r) => setTimeout(r, 20));
      swap("server-next.key", "live-server.key");
      while (reloads() < 1) await new Promise((r) => setTimeout(r, 20));
      // The client CA changes too: a bundle of both CAs, so the other CA's clients are verified from now on.
      writeFileSync(file("live-ca.crt.tmp"), Buffer.concat([readFileSync(file("ca1.crt")), readFileSync(file("ca2.crt"))]));
      renameSync(file("live-ca.crt.tmp"), file("live-ca.crt"));
      while (reloads() < 2) await new Promise((r) => setTimeout(r, 20));
      const served = await servedSerial(server);
      rotating = false;
      await load;
      for (const c of steady) c.close();
      assert.deepEqual(failures, [], `${failures.length} of ${calls} calls failed`);
      assert.ok(calls > 0);
      assert.equal(
        served.toUpperCase(),
        Buffer.from("server-next").toString("hex").toUpperCase(),
        "a new connection gets the new certificate",
      );
      const line = server.logs.find((l) => l.msg === "gRPC TLS files reloaded");
      assert.equal(line?.serialNumber, new X509Certificate(readFileSync(file("server-next.crt"))).serialNumber);
      assert.equal(((await identity(server, "client-ca2")) as PeerIdentity).subject.includes("CN=mallory"), true, "the new CA is trusted");
    } finally {
      await server.close();
    }
  });
});

describe("rotation of the HTTP port's TLS files (HTTP_TLS_*)", () => {
  test("new connections get the new certificate; a pair that does not match yet is not used", async () => {
    for (const name of ["server.crt", "server.key"]) copyFileSync(file(name), file(`http-${name}`));
    const server = await startTestServer([whoAmI], {
      HTTP_TLS_CERT_FILE: file("http-server.crt"),
      HTTP_TLS_KEY_FILE: file("http-server.key"),
      TLS_FILES_CHECK_SECONDS: "0.05",
    });
    const port = Number(new URL(server.httpUrl).port);
    /** The serial the HTTP port serves to a new TLS connection, and that the connection answers /healthcheck over HTTP/1.1. */
    const served = async (): Promise<string> => {
      const socket = tlsConnect({
        host: "127.0.0.1",
        port,
        servername: "localhost",
        ca: readFileSync(file("ca1.crt")),
        ALPNProtocols: ["http/1.1"],
      });
      await once(socket, "secureConnect");
      const serial = socket.getPeerCertificate().serialNumber;
      socket.end("GET /healthcheck HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
      let text = "";
      for await (const chunk of socket) text += chunk;
      assert.match(text, /^HTTP\/1\.1 200 /);
      return serial.toUpperCase();
    };
    try {
      assert.equal(await served(), Buffer.from("server").toString("hex").toUpperCase());
      copyFileSync(file("server-next.crt"), file("http-server.crt.tmp"));
      renameSync(file("http-server.crt.tmp"), file("http-server.crt"));
      while (!server.logs.some((l) => l.msg === "HTTP TLS files changed but cannot be used: the previous ones stay in use"))
        await new Promise((r) => setTimeout(r, 20));
      assert.equal(await served(), Buffer.from("server").toString("hex").toUpperCase(), "the previous pair while the key is old");
      copyFileSync(file("server-next.key"), file("http-server.key.tmp"));
      renameSync(file("http-server.key.tmp"), file("http-server.key"));
      while (!server.logs.some((l) => l.msg === "HTTP TLS files reloaded")) await new Promise((r) => setTimeout(r, 20));
      assert.equal(await served(), Buffer.from("server-next").toString("hex").toUpperCase());
    } finally {
      await server.close();
    }
  });
});

describe("peerIdentity", () => {
  test("reads DNS and URI SANs, quoted values, and a SPIFFE ID only when there is exactly one", () => {
    const p = peerIdentity({
      subject: { CN: "a", O: ["x", "y"] },
      subjectaltname: 'DNS:a.test, URI:spiffe://td/a, IP Address:127.0.0.1, URI:"https://x.test/a,b"',
    });
    assert.equal(p.subject, "CN=a,O=x+y");
    assert.deepEqual(p.dnsNames, ["a.test"]);
    assert.deepEqual(p.uris, ["spiffe://td/a", "https://x.test/a,b"]);
    assert.equal(p.spiffeId, "spiffe://td/a");
    assert.equal(peerIdentity({ subjectaltname: "URI:spiffe://td/a, URI:spiffe://td/b" }).spiffeId, undefined);
  });
});
