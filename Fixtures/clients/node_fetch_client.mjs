#!/usr/bin/env node
// netsim exec client for Node's built-in fetch (undici), the "bring your own client" example of
// docs/drivers.md. One process = one undici global dispatcher = one connection pool per origin.
// It keeps undici's defaults (keep-alive 4 s, no retries) and maps config by the protocol's rules:
//   timeout         -> AbortSignal.timeout(timeout): fetch has a total timeout only through a signal
//   connect_timeout -> not settable without importing undici (not bundled as a module): logged
//   pool, retries   -> fetch has neither a per-host limit nor retries: logged, library behaviour kept
import { createHash } from "node:crypto";
import { createInterface } from "node:readline";

const log = (text) => process.stderr.write(`node_fetch_client: ${text}\n`);
const emit = (message) => process.stdout.write(JSON.stringify(message) + "\n");

// Error kinds from undici's error codes (err.cause.code), the only reliable signal fetch gives.
// `answered`: the response head had come, so a close now cuts the body short ("other").
function kindOf(error, answered) {
  if (error?.name === "TimeoutError") return "timeout";
  const code = error?.cause?.code ?? error?.code ?? "";
  if (code === "ECONNREFUSED") return "refused";
  if (code === "ECONNRESET" || code === "EPIPE") return "reset";
  if (code === "UND_ERR_SOCKET") {
    // "other side closed": a FIN. Before any response byte it is closed-before-response.
    return answered ? "other" : "closed-before-response";
  }
  if (code.startsWith("UND_ERR_") && code.includes("TIMEOUT")) return "timeout";
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return "dns";
  if (/CERT|SELF_SIGNED|TLS|SSL|UNABLE_TO_VERIFY|ERR_TLS/.test(code)) return "tls";
  return "other";
}

let config = null;
const lines = createInterface({ input: process.stdin });
const pending = new Set();
lines.on("line", (line) => {
  if (!line.trim()) return;
  const message = JSON.parse(line);
  if (message.type === "config") {
    config = message;
    for (const unsupported of ["connect_timeout", "pool", "retries"]) {
      if (config[unsupported] != null) log(`${unsupported}=${config[unsupported]}: fetch has no such setting; undici's own behaviour is kept`);
    }
    emit({ type: "hello", name: "node-fetch", version: `undici ${process.versions.undici ?? "?"} (node ${process.version})`, protocol: 1 });
    return;
  }
  if (message.type !== "request") return log(`unexpected line: ${line}`);
  const job = perform(message).then(emit);
  pending.add(job);
  job.finally(() => pending.delete(job));
});
lines.on("close", async () => {
  await Promise.all(pending);
  process.exit(0);
});

async function perform(request) {
  const started = performance.now();
  const answer = { id: request.id, status: null, headers: {}, body_sha256: null, body_length: null, body: null, error: null, local_port: null };
  let answered = false;
  try {
    const response = await fetch(request.url, {
      method: request.method,
      headers: request.headers,
      body: request.body ?? undefined,
      signal: config?.timeout != null ? AbortSignal.timeout(config.timeout * 1000) : undefined,
    });
    answered = true;
    const data = Buffer.from(await response.arrayBuffer());
    answer.status = response.status;
    // Repeated headers joined with ", " (the protocol's rule); forEach hands each Set-Cookie
    // over on its own, so assigning kept only the last.
    response.headers.forEach((value, name) => {
      answer.headers[name] = name in answer.headers ? `${answer.headers[name]}, ${value}` : value;
    });
    answer.body_sha256 = createHash("sha256").update(data).digest("hex");
    answer.body_length = data.length;
    answer.body = data.subarray(0, 65536).toString("utf8");
  } catch (error) {
    answer.error = { kind: kindOf(error, answered), message: `${error.name}: ${error.message}${error.cause ? ` (${error.cause.code ?? ""} ${error.cause.message ?? error.cause})` : ""}` };
  }
  answer.elapsed = (performance.now() - started) / 1000;
  return answer;
}
