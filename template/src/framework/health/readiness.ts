import type { Server } from "@grpc/grpc-js";
import { HealthImplementation } from "grpc-health-check";

/**
 * The one readiness state of the process. Not ready until start-up calls `setReady()`,
 * and not ready again from the first step of shutdown. gRPC health follows it for `""`
 * and for every served service; other names answer NOT_FOUND.
 */
export class Readiness {
  #ready = false;
  readonly #health: HealthImplementation;
  readonly #services: string[];

  constructor(serviceNames: readonly string[]) {
    this.#services = ["", ...serviceNames];
    this.#health = new HealthImplementation(Object.fromEntries(this.#services.map((s) => [s, "NOT_SERVING"])));
  }

  get ready(): boolean {
    return this.#ready;
  }

  setReady(): void {
    this.#set(true);
  }

  /** Readiness fails from here on: load balancers stop sending new work. */
  fail(): void {
    this.#set(false);
  }

  addToServer(server: Server): void {
    this.#health.addToServer(server);
  }

  #set(ready: boolean): void {
    this.#ready = ready;
    for (const s of this.#services) this.#health.setStatus(s, ready ? "SERVING" : "NOT_SERVING");
  }
}
