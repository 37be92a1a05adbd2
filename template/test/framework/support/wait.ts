/** Waiting for something a test cannot await directly, by event-loop turns rather than by time. */

/** Resolves to `find()`'s first result other than undefined, asking again after each turn of the event loop. */
export async function waitFor<T>(find: () => T | undefined): Promise<T> {
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    await new Promise((r) => setImmediate(r));
  }
}
