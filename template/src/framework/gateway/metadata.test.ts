import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Metadata } from "@grpc/grpc-js";
import { EVENT_STREAM, Marshalers, ndjsonMarshaler, sseMarshaler } from "./marshalers.js";
import { headersFromMetadata, METADATA_PREFIX, responseHeaders } from "./metadata.js";

describe("headersFromMetadata", () => {
  test("prefixes keys, keeps the trace header's name, base64s binary values, repeats repeated keys, drops grpc-* and transport keys", () => {
    const md = new Metadata();
    md.add("x-trace-id", "t1");
    md.add("color", "blue");
    md.add("color", "green");
    md.add("blob-bin", Buffer.from([0, 1, 2]));
    md.add("grpc-status-details-bin", Buffer.from([1]));
    md.add("content-type", "application/grpc");
    assert.deepEqual(headersFromMetadata(md, "grpc-metadata-", "x-trace-id"), {
      "x-trace-id": "t1",
      "grpc-metadata-color": ["blue", "green"],
      "grpc-metadata-blob-bin": "AAEC",
    });
    assert.equal(headersFromMetadata(new Metadata(), "grpc-trailer-", "x-trace-id"), undefined);
  });
});

describe("responseHeaders", () => {
  test("one entry kept aside by the context gives the same headers as that entry in metadata", () => {
    const keys = ["x-trace-id", "x-request-id", "grpc-trace", "content-type", "date", "te"];
    for (const key of keys) {
      const md = new Metadata();
      md.set(key, "4bf92f35-77b3-4da6-a3ce-929d0e0e4736");
      assert.deepEqual(
        responseHeaders([key, "4bf92f35-77b3-4da6-a3ce-929d0e0e4736"], "x-trace-id"),
        headersFromMetadata(md, METADATA_PREFIX, "x-trace-id"),
        key,
      );
    }
  });

  test("made metadata go through headersFromMetadata; nothing set is no headers", () => {
    const md = new Metadata();
    md.set("x-trace-id", "t1");
    md.add("color", "blue");
    assert.deepEqual(responseHeaders(md, "x-trace-id"), { "x-trace-id": "t1", "grpc-metadata-color": "blue" });
    assert.equal(responseHeaders(undefined, "x-trace-id"), undefined);
  });
});

describe("Marshalers.select", () => {
  const marshalers = new Marshalers({ sse: true });
  test("NDJSON unless Accept lists a registered media type with q > 0", () => {
    assert.equal(marshalers.select(undefined), ndjsonMarshaler);
    assert.equal(marshalers.select("*/*"), ndjsonMarshaler);
    assert.equal(marshalers.select("application/json"), ndjsonMarshaler);
    assert.equal(marshalers.select("text/event-stream"), sseMarshaler);
    assert.equal(marshalers.select("Text/Event-Stream; charset=utf-8"), sseMarshaler);
    assert.equal(marshalers.select("application/json, text/event-stream;q=0.1"), sseMarshaler);
    assert.equal(marshalers.select("text/event-stream;q=0"), ndjsonMarshaler);
    assert.equal(marshalers.select("text/event-stream; q=0.0, application/x-ndjson"), ndjsonMarshaler);
    assert.equal(marshalers.select("application/x-ndjson, text/event-stream"), ndjsonMarshaler, "the first listed wins");
  });

  test("without SSE only NDJSON is served", () => {
    assert.deepEqual(new Marshalers({ sse: false }).mediaTypes(), ["application/x-ndjson"]);
    assert.equal(new Marshalers({ sse: false }).select(EVENT_STREAM), ndjsonMarshaler);
  });
});
