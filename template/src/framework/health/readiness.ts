import { EventEmitter } from "node:events";
import { create } from "@bufbuild/protobuf";
import { type Server, type ServerUnaryCall, type ServerWritableStream, type sendUnaryData, status } from "@grpc/grpc-js";
import {
  Health,
  type HealthCheckRequest,
  type HealthCheckResponse,
  HealthCheckResponseSchema,
  HealthListResponseSchema,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "../../gen/grpc/health/v1/health_pb.js";
import { grpcServiceDefinition } from "../server/grpc-definition.js";

/**
 * The one readiness state of the process, served as /readycheck and as the standard
 * grpc.health.v1.Health service (Check, Watch, List) for `""` and every served service.
 * Not ready until start-up calls `setReady()`, and not ready again from the first step
 * of shutdown. Unknown service names answer NOT_FOUND.
 */
export class Readiness {
  #ready = false;
  /** start-up called setReady() and shutdown has not begun. */
  #started = false;
  /** What readiness still waits for besides start-up (e.g. the identity provider's key set). */
  readonly #pending = new Set<string>();
  readonly #services: string[];
  readonly #changes = new EventEmitter().setMaxListeners(0);

  constructor(serviceNames: readonly string[]) {
    this.#services = ["", ...serviceNames];
  }

  get ready(): boolean {
    return this.#ready;
  }

  setReady(): void {
    this.#started = true;
    this.#set(this.#pending.size === 0);
  }

  /** Readiness fails from here on: load balancers stop sending new work. */
  fail(): void {
    this.#started = false;
    this.#set(false);
  }

  /**
   * Holds readiness back until the returned function is called, as well as until start-up ends: for what
   * calls cannot do without (the identity provider's key set). Named for the "not ready" log line.
   */
  waitFor(what: string): () => void {
    this.#pending.add(what);
    return () => {
      this.#pending.delete(what);
      this.#set(this.#started && this.#pending.size === 0);
    };
  }

  /** What readiness still waits for besides start-up. */
  get waitingFor(): readonly string[] {
    return [...this.#pending];
  }

  /** Ends every open Watch stream; called when the gRPC server is about to stop. */
  closeWatches(): void {
    this.#changes.emit("close");
  }

  #set(ready: boolean): void {
    if (ready === this.#ready) return;
    this.#ready = ready;
    this.#changes.emit("change");
  }

  #status(service: string): ServingStatus | undefined {
    if (!this.#services.includes(service)) return undefined;
    return this.#ready ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;
  }

  #response(status: ServingStatus): HealthCheckResponse {
    return create(HealthCheckResponseSchema, { status });
  }

  /** Registers grpc.health.v1.Health directly on the server: health calls never go through the chain. */
  addToServer(server: Server): void {
    server.addService(grpcServiceDefinition(Health), {
      Check: (call: ServerUnaryCall<HealthCheckRequest, HealthCheckResponse>, callback: sendUnaryData<HealthCheckResponse>) => {
        const s = this.#status(call.request.service);
        if (s === undefined) callback({ code: status.NOT_FOUND, details: `unknown service ${call.request.service}` });
        else callback(null, this.#response(s));
      },
      Watch: (call: ServerWritableStream<HealthCheckRequest, HealthCheckResponse>) => {
        let last: ServingStatus | undefined;
        const send = () => {
          const s = this.#status(call.request.service) ?? ServingStatus.SERVICE_UNKNOWN;
          if (s !== last) call.write(this.#response(s));
          last = s;
        };
        // Watches never end on their own; shutdown ends them so the server can stop gracefully.
        const end = () => call.end();
        send();
        this.#changes.on("change", send);
        this.#changes.once("close", end);
        call.once("cancelled", () => {
          this.#changes.off("change", send);
          this.#changes.off("close", end);
        });
      },
      List: (_call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => {
        const statuses = Object.fromEntries(this.#services.map((s) => [s, this.#response(this.#status(s)!)]));
        callback(null, create(HealthListResponseSchema, { statuses }));
      },
    });
  }
}
