import type { Metadata, MetadataValue } from "@grpc/grpc-js";

/**
 * grpc-js keeps a Metadata's entries in a Map of lowercase keys (`internalRepr`, protected but there since
 * grpc-js 1.0). Every call reads a few headers (trace, debug, gateway path) and checks whether its response
 * header is empty; `get` lower-cases the key again and makes an empty array for each absent one, and the
 * public emptiness check (`getMap`) copies every entry into a new object. Should a grpc-js release rename
 * the field, these fall back to the public methods.
 */
function entriesOf(metadata: Metadata): Map<string, MetadataValue[]> | undefined {
  const repr = (metadata as unknown as { internalRepr?: unknown }).internalRepr;
  return repr instanceof Map ? (repr as Map<string, MetadataValue[]>) : undefined;
}

/** `metadata.get(key)[0]` for a key that is already lowercase. */
export function firstValue(metadata: Metadata, lowercaseKey: string): MetadataValue | undefined {
  const entries = entriesOf(metadata);
  return entries !== undefined ? entries.get(lowercaseKey)?.[0] : metadata.get(lowercaseKey)[0];
}

/** Whether the metadata has no value at all (what `Object.keys(metadata.getMap()).length === 0` says). */
export function isEmptyMetadata(metadata: Metadata): boolean {
  const entries = entriesOf(metadata);
  if (entries === undefined) return Object.keys(metadata.getMap()).length === 0;
  for (const values of entries.values()) if (values.length > 0) return false;
  return true;
}

/**
 * `metadata.set(key, value)` for a pair its caller has already checked (a lowercase key legal for a text
 * value, a printable-ASCII value): grpc-js's own checks, two regular expressions, are not run again per call.
 */
export function setChecked(metadata: Metadata, lowercaseKey: string, value: string): void {
  const entries = entriesOf(metadata);
  if (entries !== undefined) entries.set(lowercaseKey, [value]);
  else metadata.set(lowercaseKey, value);
}
