import assert from "node:assert/strict";
import { constants } from "node:http2";
import { describe, test } from "node:test";
import { Metadata } from "@grpc/grpc-js";
import { Code } from "../call/status.js";
import { statusFromClose, statusFromTrailers } from "./grpc-wire-status.js";

describe("statusFromTrailers", () => {
  test("OK is no error; the trailer keeps everything but grpc-status and grpc-message", () => {
    const trailer = new Metadata();
    assert.equal(statusFromTrailers({ "grpc-status": "0", "grpc-message": "", k: "v" }, 200, trailer), undefined);
    assert.deepEqual(trailer.getMap(), { k: "v" });
  });

  test("grpc-message is fully percent-decoded, reserved characters included; a bad escape keeps it as sent", () => {
    const status = statusFromTrailers({ "grpc-status": "5", "grpc-message": "no book %2Fshelves%2F1 %23a %3Fb %26c" }, 200, new Metadata());
    assert.equal(status?.code, Code.NOT_FOUND);
    assert.equal(status?.message, "no book /shelves/1 #a ?b &c");
    assert.equal(statusFromTrailers({ "grpc-status": "2", "grpc-message": "50% off" }, 200, new Metadata())?.message, "50% off");
  });

  test("no grpc-status: the HTTP status maps, else UNKNOWN", () => {
    assert.equal(statusFromTrailers({}, 404, new Metadata())?.code, Code.UNIMPLEMENTED);
    assert.equal(statusFromTrailers({}, 500, new Metadata())?.code, Code.UNKNOWN);
    assert.equal(statusFromTrailers({}, 200, new Metadata())?.message, "No status information received");
    assert.equal(statusFromTrailers({ "grpc-status": "x" }, 200, new Metadata())?.code, Code.UNKNOWN);
  });

  test("custom -bin values folded into one header are split", () => {
    const trailer = new Metadata();
    statusFromTrailers(
      { "grpc-status": "0", "k-bin": `${Buffer.from("a").toString("base64")}, ${Buffer.from("b").toString("base64")}` },
      200,
      trailer,
    );
    assert.deepEqual(trailer.get("k-bin"), [Buffer.from("a"), Buffer.from("b")]);
  });
});

describe("statusFromClose", () => {
  test("a socket error or a lost connection is UNAVAILABLE; our own cancel on a live session is CANCELLED", () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" });
    assert.equal(statusFromClose(constants.NGHTTP2_CANCEL, refused, true, new Metadata()).code, Code.UNAVAILABLE);
    assert.equal(statusFromClose(constants.NGHTTP2_CANCEL, undefined, true, new Metadata()).code, Code.UNAVAILABLE);
    assert.equal(statusFromClose(constants.NGHTTP2_CANCEL, undefined, false, new Metadata()).code, Code.CANCELLED);
    const reset = Object.assign(new Error("Stream closed with error code NGHTTP2_INTERNAL_ERROR"), { code: "ERR_HTTP2_STREAM_ERROR" });
    assert.equal(statusFromClose(constants.NGHTTP2_INTERNAL_ERROR, reset, false, new Metadata()).code, Code.INTERNAL);
  });
});
