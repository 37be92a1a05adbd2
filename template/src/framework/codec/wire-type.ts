import { ScalarType } from "@bufbuild/protobuf";

/** The wire type a scalar of this type is written with when not packed: 0 varint, 1 64-bit, 2 length-delimited, 5 32-bit. */
export function wireTypeOf(type: ScalarType): number {
  switch (type) {
    case ScalarType.STRING:
    case ScalarType.BYTES:
      return 2;
    case ScalarType.DOUBLE:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return 1;
    case ScalarType.FLOAT:
    case ScalarType.FIXED32:
    case ScalarType.SFIXED32:
      return 5;
    default:
      return 0;
  }
}
