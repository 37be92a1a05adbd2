import { after, before } from "node:test";

/**
 * Keeps the event loop referenced for the rest of the file. The framework unrefs its own timers (a batch
 * flush, the default deadline) so they never hold a process open; a test that awaits one has nothing else
 * keeping the loop alive, and Node 22's runner then ends the file with the test still pending ("Promise
 * resolution is still pending but the event loop has already resolved"). Node 24's runner waits.
 */
export function holdEventLoopDuringTests(): void {
  let handle: NodeJS.Timeout | undefined;
  before(() => {
    handle = setInterval(() => {}, 2 ** 31 - 1);
  });
  after(() => clearInterval(handle));
}
