-- wrk: POST the body in BENCH_BODY (JSON), or the bytes of the file BENCH_BODY_FILE with the content type
-- BENCH_CONTENT_TYPE (gRPC-Web frames hold NUL bytes, which an environment variable cannot); BENCH_HEADER
-- adds one "name: value" header. At the end print one machine-readable line for bench/run.ts.
wrk.method = "POST"
local file = os.getenv("BENCH_BODY_FILE")
if file then
  local f = assert(io.open(file, "rb"))
  wrk.body = f:read("*a")
  f:close()
else
  wrk.body = os.getenv("BENCH_BODY")
end
wrk.headers["Content-Type"] = os.getenv("BENCH_CONTENT_TYPE") or "application/json"
local extra = os.getenv("BENCH_HEADER")
if extra then
  local name, value = extra:match("^([^:]+):%s*(.*)$")
  wrk.headers[name] = value
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH {"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50_us":%d,"p99_us":%d}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
