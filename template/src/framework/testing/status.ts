import assert from "node:assert/strict";
import type { Metadata } from "@grpc/grpc-js";

export interface CallStatus {
  code: number;
  details: string;
  metadata: Metadata;
}

/** The status a gRPC call failed with; fails the test if the call succeeded. */
export async function statusOf(call: Promise<unknown>): Promise<CallStatus> {
  try {
    await call;
  } catch (err) {
    return err as CallStatus;
  }
  assert.fail("expected the call to fail");
}
