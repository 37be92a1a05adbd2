/**
 * A test-only service over test/proto/gatewaytest/v1/library.proto for the gateway tests: it records
 * every request exactly as its handler received it, and answers fixed, predictable messages.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { create, type DescMessage, type JsonValue, type Message, type MessageInitShape, toJson } from "@bufbuild/protobuf";
import { Metadata } from "@grpc/grpc-js";
import { Code, defineService, GrpcError } from "../../src/framework/index.js";
import { HttpBodySchema } from "../../src/gen/google/api/httpbody_pb.js";
import { type BookSchema, Genre, LibraryService } from "../gen/gatewaytest/v1/library_pb.js";

export interface Seen {
  method: string;
  /** The request as canonical JSON (no zero values), as the handler got it. */
  request: JsonValue;
  /** The incoming metadata keys the test cares about (everything but transport headers). */
  metadata: Record<string, string>;
}

const TRANSPORT = new Set(["content-type", "user-agent", "te", "grpc-accept-encoding", "grpc-encoding", "x-gateway-http-path"]);

export function createLibrary() {
  const seen: Seen[] = [];
  // StreamFile calls with `hold` waiting for release().
  const held: (() => void)[] = [];
  const hold = (signal: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      held.push(resolve);
      signal.addEventListener("abort", () => reject(signal.reason), { once: true });
    });
  const record = (method: string, schema: DescMessage, request: Message, metadata: Metadata) => {
    const md: Record<string, string> = {};
    for (const [k, v] of Object.entries(metadata.getMap())) {
      if (!TRANSPORT.has(k)) md[k] = typeof v === "string" ? v : `base64:${v.toString("base64")}`;
    }
    seen.push({ method, request: toJson(schema, request), metadata: md });
  };

  const dune = (name: string): MessageInit<typeof BookSchema> => ({
    name,
    title: "Dune",
    id: 9007199254740993n,
    genre: Genre.FICTION,
    tags: ["sf", "classic"],
    labels: { lang: "en" },
    author: { name: "Frank Herbert", born: 1920 },
    published: { seconds: -139449600n, nanos: 0 },
  });

  const service = defineService(LibraryService, {
    handlers: {
      getBook(req, ctx) {
        record("GetBook", LibraryService.method.getBook.input, req, ctx.metadata);
        ctx.responseHeader.set("book-source", "shelf");
        ctx.responseTrailer.set("book-checksum", "c0ffee");
        return dune(req.name);
      },
      createBook(req, ctx) {
        record("CreateBook", LibraryService.method.createBook.input, req, ctx.metadata);
        return { title: req.book?.title, genre: req.book?.genre, name: `${req.parent}/books/${req.bookId}` };
      },
      updateBook(req, ctx) {
        record("UpdateBook", LibraryService.method.updateBook.input, req, ctx.metadata);
        return req.book ?? {};
      },
      setTitle(req, ctx) {
        record("SetTitle", LibraryService.method.setTitle.input, req, ctx.metadata);
        return { name: req.name, title: req.title };
      },
      publishBook(req, ctx) {
        record("PublishBook", LibraryService.method.publishBook.input, req, ctx.metadata);
        return { name: req.name, published: req.at };
      },
      listBooks(req, ctx) {
        record("ListBooks", LibraryService.method.listBooks.input, req, ctx.metadata);
        const books = Array.from({ length: req.pageSize }, (_, i) => dune(`${req.parent}/books/${i + 1}`));
        return { books, nextPageToken: "next" };
      },
      deleteBook(req, ctx) {
        record("DeleteBook", LibraryService.method.deleteBook.input, req, ctx.metadata);
        if (req.name.endsWith("/missing")) {
          ctx.responseHeader.set("book-source", "shelf");
          throw new GrpcError(Code.NOT_FOUND, "no such book", { metadata: trailer("book-checksum", "none") });
        }
        return {};
      },
      query(req, ctx) {
        record("Query", LibraryService.method.query.input, req, ctx.metadata);
        return req;
      },
      async *watchBooks(req, ctx) {
        record("WatchBooks", LibraryService.method.watchBooks.input, req, ctx.metadata);
        ctx.responseHeader.set("book-source", "watch");
        ctx.responseTrailer.set("book-count", String(req.count));
        for (let i = 1; i <= req.count; i++) {
          if (i > 1 && req.intervalMs > 0) await sleep(req.intervalMs, undefined, { signal: ctx.signal });
          yield { name: `${req.parent}/books/${i}`, title: `Book ${i}` } satisfies MessageInit<typeof BookSchema>;
        }
        if (req.failCode !== 0) throw new GrpcError(req.failCode, "watch failed");
      },
      downloadFile(req, ctx) {
        record("DownloadFile", LibraryService.method.downloadFile.input, req, ctx.metadata);
        if (req.failCode !== 0) throw new GrpcError(req.failCode, "download failed");
        ctx.responseHeader.set("file-name", req.name);
        return { contentType: req.contentType, data: pattern(req.size) };
      },
      getAttachment(req, ctx) {
        record("GetAttachment", LibraryService.method.getAttachment.input, req, ctx.metadata);
        return { name: req.name, file: req.size > 0 ? { contentType: req.contentType, data: pattern(req.size) } : undefined };
      },
      async *streamFile(req, ctx) {
        record("StreamFile", LibraryService.method.streamFile.input, req, ctx.metadata);
        ctx.responseHeader.set("file-name", req.name);
        for (const [i, chunk] of req.chunks.entries()) {
          if (i === 1 && req.hold) await hold(ctx.signal);
          const contentType = i === 0 ? req.contentType : "application/x-ignored";
          yield create(HttpBodySchema, { contentType, data: new TextEncoder().encode(chunk) });
        }
        if (req.failCode !== 0) throw new GrpcError(req.failCode, "stream failed");
      },
      uploadFile(req, ctx) {
        record("UploadFile", LibraryService.method.uploadFile.input, req, ctx.metadata);
        const file = req.file;
        return { name: req.name, contentType: file?.contentType, size: file?.data.length ?? -1, note: req.note };
      },
      echoBody(req, ctx) {
        record("EchoBody", HttpBodySchema, req, ctx.metadata);
        return { contentType: req.contentType || "application/x-empty", data: req.data };
      },
    },
  });
  return {
    service,
    seen,
    last: () => seen[seen.length - 1],
    /** Lets every held StreamFile call go on; resolves with how many there were. */
    release: () => held.splice(0).map((resolve) => resolve()).length,
  };
}

/** Bytes 0, 1, … 255, 0, 1 … of the given length: every byte value, most not valid UTF-8. */
export function pattern(size: number): Uint8Array {
  return Uint8Array.from({ length: size }, (_, i) => i % 256);
}

function trailer(key: string, value: string): Metadata {
  const md = new Metadata();
  md.set(key, value);
  return md;
}

type MessageInit<S extends DescMessage> = MessageInitShape<S>;
