import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { createSecureContext, type SecureContext } from "node:tls";
import { ServerCredentials } from "@grpc/grpc-js";
import type { Config } from "../config/schema.js";

/** gRPC over TLS: the server's credentials, and how the gateway's loopback client trusts it. */
export interface GrpcTls {
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

/**
 * Reads GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE at start-up (undefined when unset). An unreadable file,
 * a file that is not PEM, or a key that does not match the certificate fails with a message naming the variables.
 */
export function loadGrpcTls(
  config: Pick<Config, "GRPC_TLS_CERT_FILE" | "GRPC_TLS_KEY_FILE">,
  gatewayHost = "127.0.0.1",
): GrpcTls | undefined {
  if (config.GRPC_TLS_CERT_FILE === undefined || config.GRPC_TLS_KEY_FILE === undefined) return undefined;
  const { cert, key, leaf } = readPair("GRPC_TLS_CERT_FILE", config.GRPC_TLS_CERT_FILE, "GRPC_TLS_KEY_FILE", config.GRPC_TLS_KEY_FILE);
  // The certificate file is the only trust root; a partial chain (Node ≥ 20.18) lets a CA-issued leaf be trusted as itself.
  const context = createSecureContext({ ca: cert, allowPartialTrustChain: true });
  return {
    server: ServerCredentials.createSsl(null, [{ cert_chain: cert, private_key: key }], false),
    gateway: { secureContext: context, serverName: targetNameOverride(leaf, gatewayHost) },
  };
}

/** Reads HTTP_TLS_CERT_FILE and HTTP_TLS_KEY_FILE at start-up (undefined when unset), checked as loadGrpcTls checks its pair. */
export function loadHttpTls(config: Pick<Config, "HTTP_TLS_CERT_FILE" | "HTTP_TLS_KEY_FILE">): { cert: Buffer; key: Buffer } | undefined {
  if (config.HTTP_TLS_CERT_FILE === undefined || config.HTTP_TLS_KEY_FILE === undefined) return undefined;
  const { cert, key } = readPair("HTTP_TLS_CERT_FILE", config.HTTP_TLS_CERT_FILE, "HTTP_TLS_KEY_FILE", config.HTTP_TLS_KEY_FILE);
  return { cert, key };
}
