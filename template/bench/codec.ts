// CPU time per message of the binary codecs on the bench's Echo messages (the fixture's, bench/proto.ts):
// protobuf-es's fromBinary/toBinary (+ the Buffer copy the gRPC path made), the framework's compiled codec
// (src/framework/codec/), and protobufjs as @grpc/proto-loader serves it (the proto-loader reference's codec,
// with its options). Each case runs in interleaved rounds and its fastest round is printed: process CPU time,
// which other load on the machine moves less than wall time (it still moves it: compare within one run).
//
//   node --import tsx bench/codec.ts [rounds=9] [iterations=200000]
import path from "node:path";
import { fileURLToPath } from "node:url";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import type { MethodDefinition } from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";
import { binaryCodec } from "../src/framework/codec/codec.js";
import { MESSAGE } from "./lib.js";
import { EchoRequestSchema, EchoResponseSchema, Service } from "./proto.js";

const [roundsArg, nArg] = process.argv.slice(2);
const rounds = Number(roundsArg ?? 9);
const n = Number(nArg ?? 200_000);

const TEST_PROTO = fileURLToPath(new URL("../test/proto", import.meta.url));
const PROTO = fileURLToPath(new URL("../proto", import.meta.url));
const loaded = loadSync(path.join(TEST_PROTO, `${Service.file.name}.proto`), {
  includeDirs: [TEST_PROTO, PROTO],
  longs: String,
  enums: String,
  defaults: true,
});
const echo = (loaded[Service.typeName] as Record<string, MethodDefinition<object, object>>)[Service.method.echo.name]!;

const request = toBinary(EchoRequestSchema, create(EchoRequestSchema, { message: MESSAGE }));
const requestBuffer = Buffer.from(request);
const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
const response = create(EchoResponseSchema, { message: MESSAGE, traceId, receivedAt: timestampNow() });
const plain = {
  message: MESSAGE,
  traceId,
  receivedAt: { seconds: String(response.receivedAt!.seconds), nanos: response.receivedAt!.nanos },
};
const requestCodec = binaryCodec(EchoRequestSchema);
const responseCodec = binaryCodec(EchoResponseSchema);
if (!responseCodec.encode(response).equals(Buffer.from(toBinary(EchoResponseSchema, response)))) throw new Error("codec bytes differ");

const cases: [string, () => unknown][] = [
  ["decode EchoRequest: protobuf-es fromBinary", () => fromBinary(EchoRequestSchema, requestBuffer)],
  ["decode EchoRequest: compiled codec", () => requestCodec.decode(requestBuffer)],
  ["decode EchoRequest: protobufjs (proto-loader)", () => echo.requestDeserialize(requestBuffer)],
  ["encode EchoResponse: protobuf-es toBinary + Buffer.from", () => Buffer.from(toBinary(EchoResponseSchema, response))],
  ["encode EchoResponse: compiled codec", () => responseCodec.encode(response)],
  ["encode EchoResponse: protobufjs (proto-loader)", () => echo.responseSerialize(plain)],
];

const best = cases.map(() => Number.POSITIVE_INFINITY);
for (const [, f] of cases) for (let i = 0; i < 20_000; i++) f();
for (let r = 0; r < rounds; r++) {
  cases.forEach(([, f], k) => {
    const start = process.cpuUsage();
    for (let i = 0; i < n; i++) f();
    const used = process.cpuUsage(start);
    best[k] = Math.min(best[k]!, ((used.user + used.system) * 1000) / n);
  });
}
for (const [k, [name]] of cases.entries()) console.log(`${name.padEnd(58)} ${best[k]!.toFixed(0).padStart(6)} ns`);
