import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Metadata } from "@grpc/grpc-js";
import { Code, GrpcError } from "../call/status.js";
import { EVENT_STREAM, Marshalers, ndjsonMarshaler, sseMarshaler } from "./marshalers.js";
import { headersFromMetadata, parseGrpcTimeout } from "./metadata.js";

describe("parseGrpcTimeout", () => {
  test("every unit of gRPC's wire format, in milliseconds", () => {
    assert.equal(parseGrpcTimeout(undefined), undefined);
    assert.equal(parseGrpcTimeout("2H"), 7_200_000);
    assert.equal(parseGrpcTimeout("3M"), 180_000);
    assert.equal(parseGrpcTimeout("10S"), 10_000);
    assert.equal(parseGrpcTimeout("250m"), 250);
    assert.equal(parseGrpcTimeout("1500u"), 1.5);
    assert.equal(parseGrpcTimeout("99999999n"), 99.999999);
  });

  test("anything else is INVALID_ARGUMENT", () => {
    for (const value of ["", "S", "1", "1s", "1.5S", "-1S", "123456789S", "1 S", ["1S", "2S"]]) {
      assert.throws(
        () => parseGrpcTimeout(value),
        (err: unknown) => err instanceof GrpcError && err.code === Code.INVALID_ARGUMENT && /Grpc-Timeout/.test(err.message),
        String(value),
      );
    }
  });
});

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
