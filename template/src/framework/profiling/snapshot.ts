import { PassThrough, type Readable } from "node:stream";
import { inspector } from "./inspector.js";

/** A V8 heap snapshot for Chrome DevTools, streamed as the inspector produces it. It pauses the process while taken. */
export function heapSnapshot(): Readable {
  const session = inspector();
  const out = new PassThrough();
  // A client that left has destroyed `out`: the rest of the snapshot is dropped, not buffered.
  const onChunk = (message: { params: { chunk: string } }) => {
    if (!out.destroyed) out.write(message.params.chunk);
  };
  session.on("HeapProfiler.addHeapSnapshotChunk", onChunk);
  session
    .post("HeapProfiler.takeHeapSnapshot", { reportProgress: false })
    .then(
      () => out.end(),
      (err: Error) => out.destroy(err),
    )
    .finally(() => session.off("HeapProfiler.addHeapSnapshotChunk", onChunk));
  return out;
}
