import assert from "node:assert/strict";
import { test } from "node:test";
import { loadConfig } from "../config/load.js";
import { serviceUrls } from "./urls.js";

test("the operational URLs follow ADMIN_PORT and leave out what is turned off", () => {
  const ports = { grpc: 9090, http: 9091, admin: 9095 };
  assert.deepEqual(serviceUrls(loadConfig({ DISABLE_PROMETHEUS: "true", DISABLE_DEBUG: "true" }), "127.0.0.1", ports), {
    rest: "http://127.0.0.1:9091",
    grpc: "127.0.0.1:9090",
    swaggerUi: "http://127.0.0.1:9095/swagger/",
  });
});

test("an IPv6 host is bracketed in every URL", () => {
  const urls = serviceUrls(loadConfig({}), "::1", { grpc: 1, http: 2, admin: undefined });
  assert.equal(urls.rest, "http://[::1]:2");
  assert.equal(urls.grpc, "[::1]:1");
  assert.equal(urls.metrics, "http://[::1]:2/metrics");
});
