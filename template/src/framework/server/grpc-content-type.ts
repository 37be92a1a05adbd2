/** `application/grpc` and `application/grpc+<codec>` (not `application/grpc-web…`): gRPC's content types. */
export function isGrpcContentType(type: string | undefined): boolean {
  return type?.startsWith("application/grpc") === true && (type.length === 16 || type[16] === "+" || type[16] === ";");
}
