import { Session } from "node:inspector/promises";

let session: Session | undefined;

/** One inspector session for the process, connected on first use (profiling costs nothing until asked for). */
export function inspector(): Session {
  if (!session) {
    session = new Session();
    session.connect();
  }
  return session;
}
