import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Metadata } from "@grpc/grpc-js";
import { firstValue, isEmptyMetadata, setChecked } from "./metadata-values.js";

describe("metadata values", () => {
  test("firstValue reads what get(key)[0] reads, for present, repeated, binary and absent keys", () => {
    const md = new Metadata();
    md.set("X-Trace-Id", "abc");
    md.add("x-many", "one");
    md.add("x-many", "two");
    md.set("x-raw-bin", Buffer.from([1, 2, 3]));
    for (const key of ["x-trace-id", "x-many", "x-raw-bin", "x-absent"]) assert.deepEqual(firstValue(md, key), md.get(key)[0], key);
    assert.equal(firstValue(md, "x-trace-id"), "abc");
    assert.equal(firstValue(md, "x-absent"), undefined);
  });

  test("isEmptyMetadata says what an empty getMap() says, as entries come and go", () => {
    const md = new Metadata();
    assert.equal(isEmptyMetadata(md), true);
    md.set("x-trace-id", "abc");
    assert.equal(isEmptyMetadata(md), false);
    md.remove("x-trace-id");
    assert.equal(isEmptyMetadata(md), true);
    assert.equal(isEmptyMetadata(md), Object.keys(md.getMap()).length === 0);
  });

  test("falls back to the public methods when grpc-js keeps its entries elsewhere", () => {
    const md = new Metadata();
    md.set("x-trace-id", "abc");
    const other = { get: (key: string) => md.get(key), getMap: () => md.getMap() } as unknown as Metadata;
    assert.equal(firstValue(other, "x-trace-id"), "abc");
    assert.equal(firstValue(other, "x-absent"), undefined);
    assert.equal(isEmptyMetadata(other), false);
    assert.equal(isEmptyMetadata({ getMap: () => ({}) } as unknown as Metadata), true);
  });

  test("setChecked leaves the metadata as set() does: same entries, same HTTP/2 headers, a replaced value", () => {
    const byGrpcJs = new Metadata();
    const checked = new Metadata();
    for (const md of [byGrpcJs, checked]) md.set("x-other", "kept");
    byGrpcJs.set("x-trace-id", "first");
    setChecked(checked, "x-trace-id", "first");
    byGrpcJs.set("x-trace-id", "4f9c1d3e-8a2b-4c6d-9e0f-1a2b3c4d5e6f");
    setChecked(checked, "x-trace-id", "4f9c1d3e-8a2b-4c6d-9e0f-1a2b3c4d5e6f");
    assert.deepEqual(checked.getMap(), byGrpcJs.getMap());
    assert.deepEqual(checked.toHttp2Headers(), byGrpcJs.toHttp2Headers());
    assert.deepEqual(checked.get("x-trace-id"), ["4f9c1d3e-8a2b-4c6d-9e0f-1a2b3c4d5e6f"]);
  });

  test("setChecked falls back to set() when grpc-js keeps its entries elsewhere", () => {
    const md = new Metadata();
    const other = { set: (key: string, value: string) => md.set(key, value) } as unknown as Metadata;
    setChecked(other, "x-trace-id", "abc");
    assert.deepEqual(md.get("x-trace-id"), ["abc"]);
  });
});
