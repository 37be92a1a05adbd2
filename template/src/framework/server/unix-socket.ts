import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Server, ServerCredentials } from "@grpc/grpc-js";

export interface UnixSocket {
  /** grpc-js target for clients, `unix:/…/grpc.sock`. */
  target: string;
  remove(): void;
}

/**
 * Binds the gRPC server to a socket in a fresh private directory (0700, socket 0600),
 * so only this user's processes can reach the gateway's hop. Resolves to undefined when
 * that is impossible, and the gateway silently stays on TCP.
 */
export async function bindUnixSocket(server: Server): Promise<UnixSocket | undefined> {
  let dir: string | undefined;
  try {
    dir = mkdtempSync(join(tmpdir(), "grpc-gateway-"));
    chmodSync(dir, 0o700);
    const path = join(dir, "grpc.sock");
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix:${path}`, ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
    );
    chmodSync(path, 0o600);
    const owned = dir;
    return { target: `unix:${path}`, remove: () => rmSync(owned, { recursive: true, force: true }) };
  } catch {
    if (dir) rmSync(dir, { recursive: true, force: true });
    return undefined;
  }
}
