// Starting and stopping modelperfobs processes from the Node tests (not a test file itself).
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export const BIN = process.env.MPO_BIN;

// Starts `modelperfobs ARGS...`; resolves with the child and its first stdout line (the
// "listening on http://..." line of simulate and proxy).
// `env`: variables added to this process's environment for the child.
export function start(args, env = {}) {
  const child = spawn(BIN, args, { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
  const lines = createInterface({ input: child.stdout });
  return new Promise((resolve, reject) => {
    lines.once('line', (line) => resolve({ child, line }));
    child.once('exit', (code) => reject(new Error(`${args[0]} exited early with ${code}`)));
  });
}

// SIGTERM, then waits for the exit (proxies flush their ledger, simulators their truth file).
export function stop(child) {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => { child.once('exit', resolve); child.kill('SIGTERM'); });
}

// The URL in a "listening on http://..." line.
export function listeningURL(line) {
  return line.match(/listening on (http:\/\/[^ ]+)/)[1];
}

// The proxy's admin URL in its "listening on" line ("admin http://...").
export function adminURL(line) {
  return line.match(/admin (http:\/\/[^ )]+)/)[1];
}
