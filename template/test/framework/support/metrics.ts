/** What the framework tests read from a running service's /metrics. */

/** `grpc_server_handled_total` for one method (by name) and code (`OK`, `Unauthenticated`…), from `<httpUrl>/metrics`; 0 when absent. */
export async function handled(server: { httpUrl: string }, method: string, code: string): Promise<number> {
  const text = await (await fetch(`${server.httpUrl}/metrics`)).text();
  const line = text
    .split("\n")
    .find((l) => l.startsWith("grpc_server_handled_total{") && l.includes(`grpc_method="${method}"`) && l.includes(`grpc_code="${code}"`));
  return line ? Number(line.slice(line.lastIndexOf(" ") + 1)) : 0;
}
