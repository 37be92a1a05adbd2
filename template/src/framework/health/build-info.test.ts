import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { loadConfig } from "../config/load.js";
import { buildInfo } from "./build-info.js";

const FIELDS = ["app", "version", "git_commit", "build_date", "branch", "node_version", "os_arch"];

describe("buildInfo", () => {
  test("has exactly the documented fields, every one a string, even when nothing is known", () => {
    const info = buildInfo(loadConfig({}), {});
    assert.deepEqual(Object.keys(info), FIELDS);
    for (const [key, value] of Object.entries(info)) assert.equal(typeof value, "string", `${key} should be a string`);
    assert.equal(info.app, "");
    assert.equal(info.version, "");
    assert.equal(info.git_commit, "");
    assert.equal(info.build_date, "");
    assert.equal(info.branch, "");
  });

  test("app and version come from package.json", () => {
    const info = buildInfo(loadConfig({}), { name: "books", version: "1.2.3" });
    assert.equal(info.app, "books");
    assert.equal(info.version, "1.2.3");
  });

  test("APP_NAME overrides the package name", () => {
    assert.equal(buildInfo(loadConfig({ APP_NAME: "books-api" }), { name: "books", version: "1.2.3" }).app, "books-api");
  });

  test("build metadata comes from GIT_COMMIT, BUILD_DATE and GIT_BRANCH", () => {
    const info = buildInfo(loadConfig({ GIT_COMMIT: "abc1234", BUILD_DATE: "2026-01-02T03:04:05Z", GIT_BRANCH: "main" }), {});
    assert.equal(info.git_commit, "abc1234");
    assert.equal(info.build_date, "2026-01-02T03:04:05Z");
    assert.equal(info.branch, "main");
  });

  test("node_version and os_arch describe the running process", () => {
    const info = buildInfo(loadConfig({}), {});
    assert.equal(info.node_version, process.version);
    assert.equal(info.os_arch, `${process.platform}/${process.arch}`);
  });
});
