// The service's generated code and implementation under names that stay the same when the scaffolder
// renames the service, so every other bench file reads the same in any generated repository.
import * as pb from "../src/gen/example/v1/example_pb.js";
import { exampleService } from "../src/service/example-service.js";

export type EchoRequest = pb.EchoRequest;
export type EchoResponse = pb.EchoResponse;
export const EchoRequestSchema = pb.EchoRequestSchema;
export const EchoResponseSchema = pb.EchoResponseSchema;
export const Service = pb.ExampleService;
export const serviceImpl = exampleService;
export const CountdownRequestSchema = pb.CountdownRequestSchema;
export const CountdownResponseSchema = pb.CountdownResponseSchema;
export const SumRequestSchema = pb.SumRequestSchema;
export const SumResponseSchema = pb.SumResponseSchema;
export const ChatRequestSchema = pb.ChatRequestSchema;
export const ChatResponseSchema = pb.ChatResponseSchema;
