/**
 * An identity provider on loopback for tests: serves a JSON Web Key Set made with jose at /jwks.json and an
 * OpenID Connect discovery document, signs tokens with its keys, and rotates them while the service runs.
 */
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type CryptoKey, exportJWK, generateKeyPair, type JWK, type JWTHeaderParameters, type JWTPayload, SignJWT } from "jose";

export interface ProviderKey {
  kid: string;
  alg: string;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  publicJwk: JWK;
}

export class KeyProvider {
  readonly server: Server;
  url = "";
  /** Keys served in the key set, by kid. */
  readonly published = new Map<string, ProviderKey>();
  /** Requests for the key set and for the discovery document. */
  jwksFetches = 0;
  discoveries = 0;
  /** While set, every request answers 503 (the provider is down). */
  down = false;
  /** The discovery document's `issuer`, when it should differ from the URL (a misconfigured or hostile provider). */
  claimedIssuer: string | undefined;

  private constructor() {
    this.server = createServer((req, res) => {
      if (this.down) {
        res.writeHead(503).end();
        return;
      }
      if (req.url === "/jwks.json") {
        this.jwksFetches++;
        res
          .writeHead(200, { "content-type": "application/json" })
          .end(JSON.stringify({ keys: [...this.published.values()].map((k) => k.publicJwk) }));
      } else if (req.url === "/.well-known/openid-configuration") {
        this.discoveries++;
        res
          .writeHead(200, { "content-type": "application/json" })
          .end(JSON.stringify({ issuer: this.claimedIssuer ?? this.url, jwks_uri: `${this.url}/jwks.json` }));
      } else res.writeHead(404).end();
    });
  }

  static async start(): Promise<KeyProvider> {
    const provider = new KeyProvider();
    provider.server.listen(0, "127.0.0.1");
    await once(provider.server, "listening");
    provider.url = `http://127.0.0.1:${(provider.server.address() as AddressInfo).port}`;
    return provider;
  }

  get jwksUrl(): string {
    return `${this.url}/jwks.json`;
  }

  /** A new key pair; published in the key set unless `publish` is false. */
  async addKey(alg: string, kid: string, publish = true): Promise<ProviderKey> {
    const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
    const publicJwk = { ...(await exportJWK(publicKey)), kid, alg, use: "sig" };
    const key = { kid, alg, privateKey, publicKey, publicJwk };
    if (publish) this.published.set(kid, key);
    return key;
  }

  /** A token signed by `key` with valid claims (sub alice, an hour to live) plus `claims`, and `header` added to its protected header. */
  sign(key: ProviderKey, claims: JWTPayload = {}, header: Partial<JWTHeaderParameters> = {}): Promise<string> {
    return new SignJWT({ sub: "alice", ...claims })
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: "JWT", ...header })
      .setIssuedAt()
      .setExpirationTime("1h")
      .sign(key.privateKey);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    this.server.close();
    await once(this.server, "close");
  }
}
