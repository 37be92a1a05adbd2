/**
 * gRPC over TLS (GRPC_TLS_CERT_FILE, GRPC_TLS_KEY_FILE) with certificates made by openssl for the
 * test: a TLS client calls Echo, plaintext is refused, and the HTTP gateway reaches the server over
 * TLS in every mode (unix falls back to TLS over TCP). Bad files stop start-up naming the variable.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { credentials } from "@grpc/grpc-js";
import { Code, createClient } from "../../src/framework/index.js";
import { loadGrpcTls, targetNameOverride } from "../../src/framework/server/tls.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { statusOf } from "../../src/framework/testing/status.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";

let dir: string;
const file = (name: string) => join(dir, name);

function openssl(...args: string[]): void {
  execFileSync("openssl", args, { stdio: ["ignore", "ignore", "pipe"] });
}

/** A self-signed P-256 certificate and key: `subject` like /CN=localhost, `san` like DNS:localhost,IP:127.0.0.1. */
function selfSigned(stem: string, subject: string, san?: string): void {
  openssl(
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-days",
    "2",
    "-subj",
    subject,
    ...(san ? ["-addext", `subjectAltName=${san}`] : []),
    "-keyout",
    file(`${stem}.key`),
    "-out",
    file(`${stem}.crt`),
  );
}

before(() => {
  dir = mkdtempSync(join(tmpdir(), "grpc-tls-test-"));
  selfSigned("local", "/CN=localhost", "DNS:localhost,IP:127.0.0.1");
  selfSigned("named", "/CN=grpc.internal", "DNS:grpc.internal"); // no 127.0.0.1: the gateway needs a name override
  selfSigned("other", "/CN=other", "DNS:other");
  selfSigned("ip-only", "/CN=ignored", "IP:127.0.0.1");
  selfSigned("cn-only", "/CN=cn.internal");
  // A leaf issued by a private CA, whose file holds only the leaf (as cert-manager's tls.crt often does without the CA).
  selfSigned("ca", "/CN=Test CA", "DNS:ca.invalid");
  openssl(
    "req",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-subj",
    "/CN=svc.internal",
    "-keyout",
    file("leaf.key"),
    "-out",
    file("leaf.csr"),
  );
  writeFileSync(file("leaf.ext"), "subjectAltName=DNS:svc.internal\n");
  openssl(
    "x509",
    "-req",
    "-in",
    file("leaf.csr"),
    "-CA",
    file("ca.crt"),
    "-CAkey",
    file("ca.key"),
    "-CAcreateserial",
    "-days",
    "2",
    "-extfile",
    file("leaf.ext"),
    "-out",
    file("leaf.crt"),
  );
  writeFileSync(file("garbage.crt"), "not a certificate\n");
  mkdirSync(file("a-directory.key"));
});

after(() => rmSync(dir, { recursive: true, force: true }));

/** A TLS client of the server trusting `stem`.crt, verifying the name localhost (TLS sends no IP as server name). */
const tlsClient = (server: TestServer, stem = "local") =>
  createClient(FixtureService, server.grpcAddress, {
    credentials: credentials.createSsl(readFileSync(file(`${stem}.crt`))),
    channelOptions: { "grpc.ssl_target_name_override": "localhost" },
    maxAttempts: 1,
  });

const tlsEnv = (stem: string, extra: Record<string, string> = {}) => ({
  GRPC_TLS_CERT_FILE: file(`${stem}.crt`),
  GRPC_TLS_KEY_FILE: file(`${stem}.key`),
  ...extra,
});

async function postEcho(server: TestServer, message: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${server.httpUrl}/api/v1/echo`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ message }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const readyLine = (server: TestServer) => server.logs.find((l) => l.msg === "ready")!;

describe("gRPC over TLS", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer([fixtureService], tlsEnv("local", { GATEWAY_MODE: "tcp" }));
  });
  after(() => server.close());

  test("a grpc-js TLS client trusting the certificate calls Echo", async () => {
    const client = tlsClient(server);
    try {
      const reply = await client.echo({ message: "over tls" });
      assert.equal(reply.message, "over tls");
      const stream: number[] = [];
      for await (const m of client.countdown({ from: 3 })) stream.push(m.remaining);
      assert.deepEqual(stream, [3, 2, 1]);
    } finally {
      client.close();
    }
  });

  test("a plaintext client is refused, and so is a client trusting another certificate", async () => {
    const plain = createClient(FixtureService, server.grpcAddress, { maxAttempts: 1 });
    const wrongRoot = tlsClient(server, "other");
    try {
      const deadline = { deadline: Date.now() + 3000 };
      assert.equal((await statusOf(plain.echo({ message: "x" }, deadline))).code, Code.UNAVAILABLE);
      assert.equal((await statusOf(wrongRoot.echo({ message: "x" }, deadline))).code, Code.UNAVAILABLE);
    } finally {
      plain.close();
      wrongRoot.close();
    }
  });

  test("the HTTP gateway reaches the server over TLS (tcp mode), unary and streaming", async () => {
    assert.equal(readyLine(server).gatewayMode, "tcp");
    assert.equal(readyLine(server).grpcTls, true);
    const { status, body } = await postEcho(server, "through the gateway");
    assert.equal(status, 200);
    assert.equal(body.message, "through the gateway");
    const res = await fetch(`${server.httpUrl}/api/v1/countdown/2`);
    assert.equal(res.status, 200);
    assert.equal((await res.text()).trim().split("\n").length, 2);
  });
});

describe("the gateway under TLS in each mode", () => {
  test("unix mode falls back to TLS over TCP (no plaintext socket)", async () => {
    const server = await startTestServer([fixtureService], tlsEnv("local", { GATEWAY_MODE: "unix" }));
    try {
      assert.equal(readyLine(server).gatewayMode, "tcp");
      const { status, body } = await postEcho(server, "unix asked");
      assert.equal(status, 200);
      assert.equal(body.message, "unix asked");
    } finally {
      await server.close();
    }
  });

  test("DISABLE_UNIX_GATEWAY=false (unix by the older switch) falls back the same way", async () => {
    const server = await startTestServer([fixtureService], tlsEnv("local", { DISABLE_UNIX_GATEWAY: "false" }));
    try {
      assert.equal(readyLine(server).gatewayMode, "tcp");
      assert.equal((await postEcho(server, "x")).status, 200);
    } finally {
      await server.close();
    }
  });

  test("in-process mode needs no hop and is unchanged", async () => {
    const server = await startTestServer([fixtureService], tlsEnv("local", { GATEWAY_MODE: "in-process" }));
    try {
      assert.equal(readyLine(server).gatewayMode, "in-process");
      assert.equal((await postEcho(server, "x")).status, 200);
    } finally {
      await server.close();
    }
  });

  test("a certificate without 127.0.0.1 works through a target name override", async () => {
    const server = await startTestServer([fixtureService], tlsEnv("named", { GATEWAY_MODE: "tcp" }));
    try {
      const { status, body } = await postEcho(server, "by name");
      assert.equal(status, 200, JSON.stringify(body));
    } finally {
      await server.close();
    }
  });

  test("a CA-issued leaf, without its CA in the file, is trusted as itself", async () => {
    const server = await startTestServer([fixtureService], tlsEnv("leaf", { GATEWAY_MODE: "tcp" }));
    try {
      const { status, body } = await postEcho(server, "partial chain");
      assert.equal(status, 200, JSON.stringify(body));
    } finally {
      await server.close();
    }
  });
});

describe("TLS files checked at start-up", () => {
  const config = (cert: string, key: string) => ({ GRPC_TLS_CERT_FILE: file(cert), GRPC_TLS_KEY_FILE: file(key) });

  test("a missing certificate file names GRPC_TLS_CERT_FILE", () => {
    assert.throws(() => loadGrpcTls(config("missing.crt", "local.key")), /^Error: GRPC_TLS_CERT_FILE: cannot read .*missing\.crt: ENOENT/);
  });

  test("an unreadable key file names GRPC_TLS_KEY_FILE", () => {
    // A directory: unreadable as a file for any user, root included.
    assert.throws(
      () => loadGrpcTls(config("local.crt", "a-directory.key")),
      /^Error: GRPC_TLS_KEY_FILE: cannot read .*a-directory\.key: EISDIR/,
    );
  });

  test("a file that is not PEM, and a key of another certificate, are named", () => {
    assert.throws(
      () => loadGrpcTls(config("garbage.crt", "local.key")),
      /^Error: GRPC_TLS_CERT_FILE: .*garbage\.crt is not a PEM certificate/,
    );
    assert.throws(
      () => loadGrpcTls(config("local.crt", "other.key")),
      /^Error: GRPC_TLS_KEY_FILE: .*other\.key is not a PEM private key matching/,
    );
  });

  test("start-up fails before preStart with that message", async () => {
    let preStart = false;
    const service = { ...fixtureService, preStart: () => void (preStart = true) };
    await assert.rejects(startTestServer([service], config("missing.crt", "local.key")), /GRPC_TLS_CERT_FILE: cannot read/);
    assert.equal(preStart, false);
  });

  test("the gateway's target name: a DNS name of the certificate, else its IP SAN, else its CN", () => {
    const pem = (stem: string) => new X509Certificate(readFileSync(file(`${stem}.crt`)));
    assert.equal(targetNameOverride(pem("local"), "127.0.0.1"), "localhost");
    assert.equal(targetNameOverride(pem("named"), "127.0.0.1"), "grpc.internal");
    assert.equal(targetNameOverride(pem("leaf"), "127.0.0.1"), "svc.internal");
    assert.equal(targetNameOverride(pem("ip-only"), "127.0.0.1"), undefined, "covered by its IP SAN");
    assert.equal(targetNameOverride(pem("cn-only"), "127.0.0.1"), "cn.internal");
  });
});
