import { ScalarType } from "@bufbuild/protobuf";

/**
 * protobuf-es's test for a scalar's zero value (its isScalarZeroValue), which an implicit-presence field
 * leaves out of the binary and the JSON form: loose for 64-bit integers (0, 0n and "0" alike), and -0 is not
 * zero for floats (it is written).
 */
export function scalarZeroTest(scalar: ScalarType): (value: unknown) => boolean {
  switch (scalar) {
    case ScalarType.BOOL:
      return (v) => v === false;
    case ScalarType.STRING:
      return (v) => v === "";
    case ScalarType.BYTES:
      return (v) => v instanceof Uint8Array && v.byteLength === 0;
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return (v) => Object.is(v, 0);
    default:
      // oxlint-disable-next-line eqeqeq -- protobuf-es's own test, which 0n and "0" pass
      return (v) => v == 0;
  }
}
