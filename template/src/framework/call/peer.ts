/** Who is at the other end of a call's TLS connection, from the client certificate it presented (mTLS). */
export interface PeerIdentity {
  /** The certificate's subject, e.g. `CN=orders,O=acme` (RFC 4514 order is not kept: as the certificate lists it). */
  readonly subject: string;
  /** Its DNS subject alternative names. */
  readonly dnsNames: readonly string[];
  /** Its URI subject alternative names. */
  readonly uris: readonly string[];
  /** The SPIFFE ID: the certificate's one `spiffe://` URI SAN (an X.509-SVID has exactly one), else undefined. */
  readonly spiffeId: string | undefined;
  /** The certificate's serial number (hex) and SHA-256 fingerprint, for logs and audits. */
  readonly serialNumber: string;
  readonly fingerprint256: string;
}

/** The part of node:tls's PeerCertificate read here. */
export interface PeerCertificateLike {
  subject?: Record<string, string | string[] | undefined> | null;
  subjectaltname?: string;
  serialNumber?: string;
  fingerprint256?: string;
}

/** `DNS:a, URI:spiffe://td/x, IP Address:…`; Node quotes a value that holds a comma or quote (JSON-style). */
const SAN_ENTRY = /(DNS|URI|IP Address|email|DirName|othername):("(?:[^"\\]|\\.)*"|[^,]*)/g;

function sanValue(raw: string): string {
  if (!raw.startsWith('"')) return raw.trim();
  try {
    return JSON.parse(raw) as string;
  } catch {
    return raw;
  }
}

/** The identity in a verified client certificate (grpc-js's `getAuthContext().sslPeerCertificate`, node:tls's getPeerCertificate()). */
export function peerIdentity(cert: PeerCertificateLike): PeerIdentity {
  const dnsNames: string[] = [];
  const uris: string[] = [];
  for (const [, kind, raw] of (cert.subjectaltname ?? "").matchAll(SAN_ENTRY)) {
    if (kind === "DNS") dnsNames.push(sanValue(raw!));
    else if (kind === "URI") uris.push(sanValue(raw!));
  }
  const spiffe = uris.filter((u) => u.startsWith("spiffe://"));
  const subject = Object.entries(cert.subject ?? {})
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join("+") : v}`)
    .join(",");
  return {
    subject,
    dnsNames,
    uris,
    spiffeId: spiffe.length === 1 ? spiffe[0] : undefined,
    serialNumber: cert.serialNumber ?? "",
    fingerprint256: cert.fingerprint256 ?? "",
  };
}
