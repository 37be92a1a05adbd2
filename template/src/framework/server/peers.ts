import type { ServerHttp2Session } from "node:http2";
import type { TLSSocket } from "node:tls";
import { type PeerIdentity, peerIdentity } from "../call/peer.js";

/**
 * The verified client certificate's identity of each open gRPC connection (mTLS), read once when the connection
 * comes (node:tls's getPeerCertificate parses the certificate on every call: ~200 us measured on a busy machine),
 * found by each call through grpc-js's public `call.getPeer()`, the connection's "address:port".
 */
export class PeerDirectory {
  readonly #byAddress = new Map<string, PeerIdentity>();

  /** Records the connection's identity, if its TLS handshake verified a client certificate. */
  track(session: ServerHttp2Session): void {
    const socket = session.socket as Partial<TLSSocket> | undefined;
    if (socket?.authorized !== true || typeof socket.getPeerCertificate !== "function") return;
    const cert = socket.getPeerCertificate();
    if (!cert?.raw) return;
    // As grpc-js's getPeer() writes it.
    const key = socket.remotePort ? `${socket.remoteAddress}:${socket.remotePort}` : String(socket.remoteAddress);
    const identity = peerIdentity(cert);
    this.#byAddress.set(key, identity);
    session.once("close", () => {
      if (this.#byAddress.get(key) === identity) this.#byAddress.delete(key);
    });
  }

  /** The identity of the connection `call.getPeer()` names; undefined without a verified client certificate. */
  get(peer: string): PeerIdentity | undefined {
    return this.#byAddress.get(peer);
  }
}
