// What the benchmarks serve and call: the framework's own fixture service (test/proto/fixture/v1/fixture.proto,
// handlers in test/framework/fixtures/fixture-service.ts), a frozen copy of the API the template starts with,
// never the service in proto/ and src/service/, which is yours to change. So the bench measures the framework
// (with the same Echo, Countdown, Sum and Chat as the template's first service, routes included) and keeps
// working whatever your proto becomes. The compiled fixture service is dist-bench/ (bench/build.ts).
import { fixtureService } from "../test/framework/fixtures/fixture-service.js";
import * as pb from "../test/gen/fixture/v1/fixture_pb.js";

export type EchoRequest = pb.EchoRequest;
export type EchoResponse = pb.EchoResponse;
export const EchoRequestSchema = pb.EchoRequestSchema;
export const EchoResponseSchema = pb.EchoResponseSchema;
export const Service = pb.FixtureService;
export const serviceImpl = fixtureService;
export const CountdownRequestSchema = pb.CountdownRequestSchema;
export const CountdownResponseSchema = pb.CountdownResponseSchema;
export const SumRequestSchema = pb.SumRequestSchema;
export const SumResponseSchema = pb.SumResponseSchema;
export const ChatRequestSchema = pb.ChatRequestSchema;
export const ChatResponseSchema = pb.ChatResponseSchema;
