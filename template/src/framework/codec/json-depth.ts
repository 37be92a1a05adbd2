/**
 * The deepest nesting of objects and arrays a JSON request body or message may have. Deeper
 * bodies are refused before JSON.parse builds them: V8's parser is iterative, so a 4 MB body of two
 * million `[` becomes two million arrays (~225 MB) before anything can look at it. 100 is what
 * protobuf's own JSON parsers allow (C++'s and Java's recursion limit), far beyond any real message.
 */
export const MAX_JSON_DEPTH = 100;

export const TOO_DEEP = `JSON nested deeper than ${MAX_JSON_DEPTH} levels`;

const QUOTE = 34;
const BACKSLASH = 92;

/**
 * Whether JSON text nests objects and arrays deeper than MAX_JSON_DEPTH. Not a validator: brackets
 * are counted outside strings only (a string's escapes are honoured), anything else is left to
 * JSON.parse. One pass, no allocation; strings are skipped with native indexOf. Hand-written: no
 * library reports depth without building the values.
 */
export function jsonTooDeep(text: string): boolean {
  const length = text.length;
  if (length <= MAX_JSON_DEPTH) return false; // 101 opening brackets need 101 characters
  let depth = 0;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // To the closing quote: one preceded by an even number of backslashes.
      for (;;) {
        const q = text.indexOf('"', i + 1);
        if (q === -1) return false; // unterminated: JSON.parse refuses it
        let b = q - 1;
        while (text.charCodeAt(b) === BACKSLASH) b--;
        i = q;
        if ((q - b) % 2 === 1) break;
      }
    } else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (++depth > MAX_JSON_DEPTH) return true;
    } else if (c === 125 /* } */ || c === 93 /* ] */) depth--;
  }
  return false;
}
