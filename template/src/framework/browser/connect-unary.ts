import type { IncomingMessage, ServerResponse } from "node:http";
import { fromJsonString, type Message } from "@bufbuild/protobuf";
import { Code as ConnectCode, ConnectError } from "@connectrpc/connect";
import { codeToHttpStatus, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { runInContext } from "../call/context.js";
import { deadlineIn } from "../call/deadline.js";
import { binaryCodec } from "../codec/codec.js";
import { jsonTooDeep, TOO_DEEP } from "../codec/json-depth.js";
import { jsonWriter } from "../gateway/json-writer.js";
import { headersFromMetadata } from "../gateway/metadata.js";
import { BODIES_HELD, HeldBody, type PartialMessageBudget } from "../overload/partial-messages.js";
import type { OnRejectedBeforeHandler } from "../server/grpc-rejections.js";
import type { BoundMethod } from "../server/methods.js";
import { discardRest } from "../server/unread-body.js";
import { connectError, fastPathContext, type UnaryFastPath } from "./connect-bridge.js";

/**
 * The Connect protocol's plainest and most common call, a unary POST of `application/json` or
 * `application/proto` without compression, served straight into our chain: the Connect project's
 * handler costs per call AbortSignals, Headers objects, async iterables and several promises that a
 * single message does not need (measured: it made our Connect JSON slower than connect-node itself).
 * Hand-written for that one shape only; its error body and status table are the Connect project's own
 * (errorToJsonBytes, codeToHttpStatus). Every other request (GET, compression, streams, gRPC-Web, a
 * protocol version other than 1) returns false and goes to the Connect project's handler.
 */
export const serveConnectUnary: UnaryFastPath = (method, req, res, maxBytes, log, onRejected, partialMessages) => {
  if (req.method !== "POST") return false;
  const headers = req.headers;
  const type = headers["content-type"];
  const json = type === "application/json" || type === "application/json; charset=utf-8";
  if (!json && type !== "application/proto") return false;
  const encoding = headers["content-encoding"];
  if (encoding !== undefined && encoding !== "identity") return false;
  const version = headers["connect-protocol-version"];
  if (version !== undefined && version !== "1") return false;
  const timeout = headers["connect-timeout-ms"];
  if (timeout !== undefined && (typeof timeout !== "string" || !/^\d{1,10}$/.test(timeout))) return false; // Connect's handler words the error

  const info = method.info;
  const ctx = fastPathContext(info, headers, res, deadlineIn(timeout === undefined ? undefined : Number(timeout)), "connect");
  readBody(req, res, maxBytes, partialMessages)
    .then(
      (body) => {
        let request: Message;
        try {
          request = json
            ? fromJsonString(info.desc.input, jsonText(body), { ignoreUnknownFields: true })
            : binaryCodec(info.desc.input).decode(body);
        } catch (err) {
          onRejected?.(info.path, ConnectCode.InvalidArgument);
          return sendError(res, new ConnectError(`cannot decode request: ${(err as Error).message}`, ConnectCode.InvalidArgument));
        }
        return runInContext(ctx, () => method.invoke({ method: info, ctx, request })).then(
          (result) => {
            if (!("message" in result)) throw new Error(`${info.path}: a stream answered a unary method`);
            // Zero-valued fields left out, byte for byte as connect-es writes JSON (compiled at start-up).
            const out = json ? jsonWriter(info.desc.output, false)(result.message) : binaryCodec(info.desc.output).encode(result.message);
            const head: Record<string, string | string[]> = {
              "content-type": json ? "application/json" : "application/proto",
              "content-length": String(Buffer.byteLength(out)),
            };
            // Unary trailers travel as prefixed headers.
            Object.assign(head, headersFromMetadata(ctx.responseHeader, ""), headersFromMetadata(ctx.responseTrailer, "trailer-"));
            res.writeHead(200, head).end(out);
          },
          (err: unknown) => sendError(res, connectError(err, ctx)),
        );
      },
      (err: ConnectError) => {
        onRejected?.(info.path, err.code); // unread (too large, broken): never reached the chain
        sendError(res, err);
      },
    )
    .catch((err: unknown) => {
      log.debug({ err, path: info.path }, "connect response failed");
      if (!res.headersSent) res.destroy();
    });
  return true;
};

/**
 * A Connect GET (a NO_SIDE_EFFECTS method, its request in the query) whose `message` cannot be decoded: answered
 * 400 invalid_argument here, and counted. Connect's own handler answers a binary one 500 internal ("parse
 * binary"), and no such failure reaches the chain to be counted. Decoded once more by Connect when it passes
 * (GET only, rare next to POST). Compressed messages are left to Connect. Returns whether it answered.
 */
export function refuseUndecodableGet(
  method: BoundMethod,
  req: IncomingMessage,
  res: ServerResponse,
  onRejected?: OnRejectedBeforeHandler,
): boolean {
  if (req.method !== "GET") return false;
  const url = req.url ?? "";
  const q = url.indexOf("?");
  if (q === -1) return false;
  const query = new URLSearchParams(url.slice(q + 1));
  if (query.get("compression") !== null) return false;
  const encoding = query.get("encoding");
  const message = query.get("message") ?? "";
  const input = method.info.desc.input;
  try {
    if (encoding === "proto") {
      binaryCodec(input).decode(query.get("base64") === "1" ? Buffer.from(message, "base64url") : Buffer.from(message, "utf8"));
    } else if (encoding === "json") {
      const text = query.get("base64") === "1" ? Buffer.from(message, "base64url").toString("utf8") : message;
      fromJsonString(input, jsonText(Buffer.from(text, "utf8")), { ignoreUnknownFields: true });
    } else return false;
  } catch (err) {
    onRejected?.(method.info.path, ConnectCode.InvalidArgument);
    sendError(res, new ConnectError(`cannot decode request: ${(err as Error).message}`, ConnectCode.InvalidArgument));
    return true;
  }
  return false;
}

/** A JSON body as text, refused when nested too deep before anything is parsed. */
function jsonText(body: Buffer): string {
  const text = body.toString("utf8");
  if (jsonTooDeep(text)) throw new Error(TOO_DEEP);
  return text;
}

/** Connect's unary error: the code's HTTP status, its JSON body, the error's metadata as headers. */
function sendError(res: ServerResponse, err: ConnectError): void {
  if (res.headersSent || res.destroyed) return;
  const body = errorToJsonBytes(err, undefined);
  const head: Record<string, string | string[]> = { "content-type": "application/json", "content-length": String(body.byteLength) };
  err.metadata.forEach((value, key) => {
    head[key] = value;
  });
  res.writeHead(codeToHttpStatus(err.code), head).end(body);
}

/**
 * The whole body, refused past `maxBytes` (RESOURCE_EXHAUSTED, as Connect's readMaxBytes) or, while not yet
 * whole, past MAX_PARTIAL_MESSAGE_BYTES.
 */
function readBody(req: IncomingMessage, res: ServerResponse, maxBytes: number, budget: PartialMessageBudget | undefined): Promise<Buffer> {
  const declared = Number(req.headers["content-length"]);
  if (declared > maxBytes) return Promise.reject(tooLarge(declared, maxBytes));
  const counting = budget?.enabled === true ? budget : undefined;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let held: HeldBody | undefined;
    const refuse = (err: ConnectError) => {
      req.removeAllListeners("data");
      held?.release();
      discardRest(req, res);
      reject(err);
    };
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) return refuse(tooLarge(size, maxBytes));
      chunks.push(chunk);
      if (counting === undefined || size === declared) return;
      held ??= new HeldBody(counting, req);
      if (!held.add(chunk.length)) refuse(new ConnectError(BODIES_HELD, ConnectCode.ResourceExhausted));
    });
    req.once("end", () => {
      held?.release();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    });
    req.once("error", () => reject(new ConnectError("request body broken", ConnectCode.Canceled)));
  });
}

function tooLarge(size: number, max: number): ConnectError {
  return new ConnectError(`message size ${size} is larger than configured readMaxBytes ${max}`, ConnectCode.ResourceExhausted);
}
