import { X509Certificate } from "node:crypto";
import { readFileSync, unwatchFile, watchFile } from "node:fs";
import { createSecureContext, type SecureContext, type SecureContextOptions } from "node:tls";
import { ServerCredentials } from "@grpc/grpc-js";
import type { Config } from "../config/schema.js";

/** gRPC over TLS: the server's credentials, and how the gateway's loopback client trusts it. */
interface GrpcTlsTrust {
  server: ServerCredentials;
  /** How the gateway's client trusts the server. */
  gateway: {
    /** Trusts exactly the configured certificate (chain), not the system roots. */
    secureContext: SecureContext;
    /** The name to verify (and send as SNI) when it dials 127.0.0.1, if the certificate lacks that IP. */
    serverName: string | undefined;
  };
}

function read(variable: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new Error(`${variable}: cannot read ${path}: ${(err as Error).message}`);
  }
}

/**
 * The name the gateway verifies (and sends as SNI) when it dials `host` (127.0.0.1): the certificate's
 * first DNS name (a wildcard's with a label filled in); else nothing when the certificate covers the
 * address itself (an IP SAN); else its subject CN. A DNS name is preferred to the address because
 * TLS forbids an IP address as the server name (RFC 6066).
 */
export function targetNameOverride(cert: X509Certificate, host: string): string | undefined {
  const san = (cert.subjectAltName ?? "").split(",").map((s) => s.trim());
  const dns = san.filter((s) => s.startsWith("DNS:")).map((s) => s.slice(4));
  if (dns[0]) return dns[0].replace(/^\*\./, "gateway.");
  if (/^[\d.]+$|:/.test(host) ? cert.checkIP(host) : cert.checkHost(host)) return undefined;
  return /(?:^|\n)CN=([^\n]+)/.exec(cert.subject)?.[1];
}

/** A certificate and its key, read and checked: a message names `certVar` or `keyVar` when one is wrong. */
function readPair(
  certVar: string,
  certPath: string,
  keyVar: string,
  keyPath: string,
): { cert: Buffer; key: Buffer; leaf: X509Certificate } {
  const cert = read(certVar, certPath);
  const key = read(keyVar, keyPath);
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(cert);
  } catch (err) {
    throw new Error(`${certVar}: ${certPath} is not a PEM certificate: ${(err as Error).message}`);
  }
  try {
    createSecureContext({ cert, key });
  } catch (err) {
    throw new Error(`${keyVar}: ${keyPath} is not a PEM private key matching ${certVar}: ${(err as Error).message}`);
  }
  return { cert, key, leaf };
}

/** One TLS identity as read from its files: certificate (chain), key, the client CA when there is one, and the leaf. */
export interface TlsFiles {
  cert: Buffer;
  key: Buffer;
  ca?: Buffer | undefined;
  leaf: X509Certificate;
}

/** The variables (and paths) of a certificate, its key and optionally a client CA. */
interface TlsPaths {
  certVar: string;
  cert: string;
  keyVar: string;
  key: string;
  caVar?: string;
  ca?: string | undefined;
}

/** Reads and checks the files; an error names the variable whose file is wrong. */
function readTlsFiles(p: TlsPaths): TlsFiles {
  const { cert, key, leaf } = readPair(p.certVar, p.cert, p.keyVar, p.key);
  if (p.ca === undefined || p.caVar === undefined) return { cert, key, leaf };
  const ca = read(p.caVar, p.ca);
  try {
    new X509Certificate(ca);
    createSecureContext({ ca });
  } catch (err) {
    throw new Error(`${p.caVar}: ${p.ca} is not a PEM CA certificate: ${(err as Error).message}`);
  }
  return { cert, key, ca, leaf };
}

const same = (a: Buffer | undefined, b: Buffer | undefined) => (a === undefined ? b === undefined : b !== undefined && a.equals(b));

/** What reloading tells its owner: new files in use, or changed files that cannot be used (the previous ones stay). */
export interface TlsReloadEvents {
  reloaded(files: TlsFiles): void;
  failed(err: Error): void;
}

/**
 * TLS files watched for changes (fs.watchFile: a stat every TLS_FILES_CHECK_SECONDS, which also sees a Kubernetes
 * Secret's symlink swap, where an inotify watch on the old file would not). On a change all of them are read
 * again and checked together: a certificate whose new key is not written yet is not used, the previous pair stays
 * until the pair matches. Connections already open keep the context they were made with: no call in flight fails.
 */
export class WatchedTlsFiles {
  current: TlsFiles;
  readonly #paths: TlsPaths;
  readonly #apply: (files: TlsFiles) => void;
  #watching: string[] = [];
  #events: TlsReloadEvents | undefined;

  constructor(paths: TlsPaths, apply: (files: TlsFiles) => void) {
    this.#paths = paths;
    this.#apply = apply;
    this.current = readTlsFiles(paths);
  }

  /** Starts watching the files, checking every `intervalMs`. */
  watch(intervalMs: number, events: TlsReloadEvents): void {
    this.#events = events;
    const files = [this.#paths.cert, this.#paths.key, ...(this.#paths.ca === undefined ? [] : [this.#paths.ca])];
    for (const file of new Set(files)) {
      watchFile(file, { interval: intervalMs, persistent: false }, this.#changed);
      this.#watching.push(file);
    }
  }

  /** Reads the files again now; called on every change seen. Unchanged contents do nothing. */
  reload(): void {
    let next: TlsFiles;
    try {
      next = readTlsFiles(this.#paths);
    } catch (err) {
      this.#events?.failed(err as Error);
      return;
    }
    const now = this.current;
    if (now.cert.equals(next.cert) && now.key.equals(next.key) && same(now.ca, next.ca)) return;
    try {
      this.#apply(next);
    } catch (err) {
      this.#events?.failed(err as Error);
      return;
    }
    this.current = next;
    this.#events?.reloaded(next);
  }

  readonly #changed = (): void => this.reload();

  stop(): void {
    for (const file of this.#watching) unwatchFile(file, this.#changed);
    this.#watching = [];
  }
}

/**
 * grpc-js server credentials whose certificate, key and CA can be replaced while the server runs: grpc-js calls
 * setSecureContext on its listening server for each update (new connections get it; open ones keep theirs).
 * Written here rather than with grpc-js's FileWatcherCertificateProvider, which, measured against its source
 * (1.14): loads the files only after the server listens (connections in the first moments are dropped), and on a
 * file it cannot read, or a certificate whose key does not match yet, drops every new connection until the next
 * read; here the previous context stays in use instead.
 */
class ReloadableServerCredentials extends ServerCredentials {
  _equals(other: ServerCredentials): boolean {
    return other === this;
  }

  replace(options: SecureContextOptions): void {
    this.updateSecureContextOptions(options);
  }
}

function contextOptions(files: TlsFiles): SecureContextOptions {
  return files.ca === undefined ? { cert: files.cert, key: files.key } : { cert: files.cert, key: files.key, ca: files.ca };
}

/** gRPC over TLS: the reloadable server credentials, the gateway's trust, and the watched files. */
export interface GrpcTls extends GrpcTlsTrust {
  files: WatchedTlsFiles;
  /** With GRPC_TLS_CLIENT_CA_FILE: whether calls must present a client certificate; undefined without mTLS. */
  clientAuth: "require" | "optional" | undefined;
}

/**
 * Reads GRPC_TLS_CERT_FILE, GRPC_TLS_KEY_FILE and GRPC_TLS_CLIENT_CA_FILE at start-up (undefined without TLS). An
 * unreadable file, a file that is not PEM, or a key that does not match the certificate fails with a message
 * naming the variables. With a client CA, clients must present a certificate that chains to it
 * (GRPC_TLS_CLIENT_AUTH=require), or may present none (optional: a certificate that does not verify gives no identity).
 * `files.watch()` starts reloading them on change: the server and the gateway's trust follow.
 */
export function loadGrpcTls(
  config: Pick<Config, "GRPC_TLS_CERT_FILE" | "GRPC_TLS_KEY_FILE"> &
    Partial<Pick<Config, "GRPC_TLS_CLIENT_CA_FILE" | "GRPC_TLS_CLIENT_AUTH">>,
  gatewayHost = "127.0.0.1",
): GrpcTls | undefined {
  if (config.GRPC_TLS_CERT_FILE === undefined || config.GRPC_TLS_KEY_FILE === undefined) return undefined;
  const clientAuth = config.GRPC_TLS_CLIENT_CA_FILE === undefined ? undefined : (config.GRPC_TLS_CLIENT_AUTH ?? "require");
  let server: ReloadableServerCredentials | undefined;
  const gateway = { secureContext: undefined as unknown as SecureContext, serverName: undefined as string | undefined };
  let trusted: Buffer[] = [];
  const trust = (files: TlsFiles) => {
    // The certificate file is the only trust root; a partial chain (Node ≥ 20.18) lets a CA-issued leaf be trusted as
    // itself. The previous certificate stays trusted beside the new one: a handshake begun before a reload may be
    // answered with either.
    trusted = [...trusted.slice(-1), files.cert];
    gateway.secureContext = createSecureContext({ ca: trusted, allowPartialTrustChain: true });
    gateway.serverName = targetNameOverride(files.leaf, gatewayHost);
  };
  const files = new WatchedTlsFiles(
    {
      certVar: "GRPC_TLS_CERT_FILE",
      cert: config.GRPC_TLS_CERT_FILE,
      keyVar: "GRPC_TLS_KEY_FILE",
      key: config.GRPC_TLS_KEY_FILE,
      caVar: "GRPC_TLS_CLIENT_CA_FILE",
      ca: config.GRPC_TLS_CLIENT_CA_FILE,
    },
    (next) => {
      server?.replace(contextOptions(next));
      trust(next);
    },
  );
  trust(files.current);
  server = new ReloadableServerCredentials(
    { requestCert: clientAuth !== undefined, rejectUnauthorized: clientAuth === "require" },
    contextOptions(files.current),
  );
  return { server, gateway, files, clientAuth };
}

/** The HTTP port's TLS files: read at start-up, and watched (files.watch) once `onReload` says where changes go. */
export interface HttpTls {
  cert: Buffer;
  key: Buffer;
  files: WatchedTlsFiles;
  onReload(apply: (files: TlsFiles) => void): void;
}

/** Reads HTTP_TLS_CERT_FILE and HTTP_TLS_KEY_FILE at start-up (undefined when unset), checked as loadGrpcTls checks its pair. */
export function loadHttpTls(config: Pick<Config, "HTTP_TLS_CERT_FILE" | "HTTP_TLS_KEY_FILE">): HttpTls | undefined {
  if (config.HTTP_TLS_CERT_FILE === undefined || config.HTTP_TLS_KEY_FILE === undefined) return undefined;
  let apply: ((files: TlsFiles) => void) | undefined;
  const files = new WatchedTlsFiles(
    { certVar: "HTTP_TLS_CERT_FILE", cert: config.HTTP_TLS_CERT_FILE, keyVar: "HTTP_TLS_KEY_FILE", key: config.HTTP_TLS_KEY_FILE },
    (next) => apply?.(next),
  );
  return {
    cert: files.current.cert,
    key: files.current.key,
    files,
    onReload: (fn) => {
      apply = fn;
    },
  };
}
