#!/usr/bin/env node
/**
 * The Hermes shell-hook bridge: `conduit-hook.mjs --state DIR <event>`.
 *
 * Hermes runs this for every hooked event, so it is plain JavaScript with nothing but Node built-ins
 * (no TypeScript loader, no dependencies): the whole round trip, process start included, stays far
 * under 100 ms. It forwards the JSON on stdin, unread, to the running host service over loopback with
 * the token of that service's boot, and prints what the service answers for Hermes. It must never
 * slow or break Hermes: when the service is not running it exits 0 at once and prints nothing, and
 * every error ends the same way.
 */
/* global process, Buffer, setTimeout, clearTimeout, URL */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** A held clarify call waits for the phone (bounded by the service's budget, under Hermes' 300 s cap). */
const HELD_TIMEOUT_MS = 295_000;
const EVENT_TIMEOUT_MS = 10_000;
const CONNECT_TIMEOUT_MS = 500;

function parseArgs(argv) {
  let stateDir = process.env.CONDUIT_STATE_DIR || '';
  let event = '';
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--state') stateDir = argv[++i] ?? '';
    else if (arg.startsWith('--state=')) stateDir = arg.slice('--state='.length);
    else if (!event) event = arg;
  }
  if (!stateDir) {
    const home = process.env.HERMES_HOME || path.join(process.env.HOME || '', '.hermes');
    stateDir = path.join(home, 'conduit-host');
  }
  return { stateDir, event };
}

function readRuntime(stateDir) {
  try {
    const info = JSON.parse(readFileSync(path.join(stateDir, 'runtime.json'), 'utf8'));
    if (typeof info.url === 'string' && typeof info.token === 'string') return info;
  } catch {
    // not running
  }
  return null;
}

function readStdin(stdin) {
  return new Promise((resolve) => {
    if (stdin.isTTY) return resolve(Buffer.alloc(0));
    const chunks = [];
    stdin.on('data', (chunk) => chunks.push(chunk));
    stdin.on('end', () => resolve(Buffer.concat(chunks)));
    stdin.on('error', () => resolve(Buffer.alloc(0)));
  });
}

function post(runtime, body, timeoutMs) {
  return new Promise((resolve) => {
    let url;
    try {
      url = new URL('/_conduit/hook', runtime.url);
    } catch {
      return resolve(null);
    }
    const request = http.request(
      {
        hostname: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': body.length,
          'x-conduit-hook-token': runtime.token,
        },
      },
      (response) => {
        const chunks = [];
        response.on('data', (chunk) => chunks.push(chunk));
        response.on('end', () => resolve(response.statusCode === 200 ? Buffer.concat(chunks).toString('utf8') : null));
        response.on('error', () => resolve(null));
      },
    );
    const connectTimer = setTimeout(() => request.destroy(), CONNECT_TIMEOUT_MS);
    request.on('socket', (socket) => socket.once('connect', () => clearTimeout(connectTimer)));
    request.setTimeout(timeoutMs, () => request.destroy());
    request.on('error', () => {
      clearTimeout(connectTimer);
      resolve(null);
    });
    request.end(body);
  });
}

/** Runs the bridge; resolves with what to print (empty for nothing). Exit code is always 0. */
export async function runHook(argv, stdin = process.stdin) {
  const { stateDir, event } = parseArgs(argv);
  const runtime = readRuntime(stateDir);
  if (!runtime) return '';
  const body = await readStdin(stdin);
  if (body.length === 0) return '';
  const answer = await post(runtime, body, event === 'pre_tool_call' ? HELD_TIMEOUT_MS : EVENT_TIMEOUT_MS);
  return answer ?? '';
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  runHook(process.argv.slice(2)).then(
    (out) => {
      if (out) process.stdout.write(out.endsWith('\n') ? out : out + '\n');
      process.exitCode = 0;
    },
    () => {
      process.exitCode = 0;
    },
  );
}
