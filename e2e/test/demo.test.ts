/**
 * The first run that shows the system working (issue 14 item 7): the demo against a real suite on free
 * ports — real relay, host service and voice gateway processes, a simulated phone and a Hermes
 * stand-in. The transcript must show the finished turn as the phone decrypted it, the approval
 * answered on the phone and received by the Hermes API server stand-in, the clarify answer given back
 * to the held hook, how to open the voice demo page, and never a credential, token or key.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '@conduit/contracts/testing';
import { runDemo, startDemoSuite, type DemoResult, type DemoSuite } from '../suite/demo.js';
import { REPO_ROOT } from '../suite/launch.js';

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'conduit-demo-'));
let demo: DemoSuite;
let result: DemoResult;
let transcript = '';

beforeAll(async () => {
  demo = await startDemoSuite(dataDir, { relay: await freePort(), host: await freePort(), voice: await freePort() });
  const lines: string[] = [];
  result = await runDemo(demo, (line) => lines.push(line));
  transcript = lines.join('\n');
}, 300_000);

afterAll(async () => {
  await demo?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** Every secret the run created: on the phone, in the stand-in, and in the state files of the servers. */
function secretsOfTheRun(): string[] {
  const stateDir = path.join(dataDir, 'hermes', 'conduit-host');
  const read = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim() : '');
  const runtime = JSON.parse(read(path.join(stateDir, 'runtime.json'))) as { token: string };
  const pairing = JSON.parse(read(path.join(dataDir, 'hermes', 'conduit-push.json'))) as {
    credential: string;
    redact_key?: string;
    e2e?: { secret: string };
  };
  return [
    ...result.phone.secrets(),
    ...demo.hermes.secrets(),
    read(path.join(stateDir, 'host-token')),
    read(path.join(stateDir, 'mcp-token')),
    runtime.token,
    pairing.credential,
    pairing.credential.split('.').at(-1) ?? '',
    pairing.redact_key ?? '',
    pairing.e2e?.secret ?? '',
    read(path.join(dataDir, 'voice-api-key')),
  ].filter((secret) => secret.length >= 16);
}

describe('npm run demo', () => {
  it('shows the finished turn as the phone decrypted it, while the relay only carried ciphertext', () => {
    expect(transcript).toMatch(
      /phone {2}shows {2}Backups\n {16}All 3 backups finished overnight; the newest is 42 GB\.\n/,
    );
    expect(transcript).toMatch(
      /phone {2}shows {2}Release prep\n {16}The build folder is gone and v1\.4 is on its way\./,
    );
    expect(result.notifications.map((n) => [n.type, n.sealed])).toEqual([
      ['response.ready', true],
      ['approval.needed', true],
      ['input.needed', true],
      ['response.ready', true],
    ]);
    const captured = readFileSync(demo.suite.capturePath, 'utf8');
    for (const plain of ['backups finished', 'Delete the build folder', 'Which release', 'v1.4', 'Release prep']) {
      expect(captured).not.toContain(plain);
    }
    expect(transcript).toContain('All 4 pushes were sealed end to end');
  });

  it('shows the approval card answered on the phone and received by the Hermes API server stand-in', () => {
    expect(transcript).toMatch(
      /phone {2}shows {2}Approval needed · Release prep\n {16}Delete the build folder \(rm -rf build\)\n {16}\[ once \| deny \]/,
    );
    expect(transcript).toMatch(
      /phone {2}tapped "once": sealed for the host, POST \/v1\/decisions\/conduit-approval-[\w-]+\/respond → answered/,
    );
    const { runId } = result.approval;
    expect(result.approval.body).toMatchObject({ choice: 'once' });
    expect(demo.hermes.approvals).toEqual([result.approval]);
    expect(transcript).toContain(`hermes API server received POST /v1/runs/${runId}/approval {"choice":"once"`);
  });

  it('returns the clarify answer from the phone to the held hook, in the clarify tool result shape', () => {
    expect(transcript).toMatch(
      /phone {2}shows {2}Input needed · Release prep\n {16}Which release should ship\?\n {16}\[ v1\.4 \(recommended\) \| v1\.5-beta \]/,
    );
    const answer = result.clarifyAnswer as { action: string; message: string };
    expect(answer.action).toBe('block');
    expect(JSON.parse(answer.message)).toEqual({
      question: 'Which release should ship?',
      choices_offered: ['v1.4 (recommended)', 'v1.5-beta'],
      user_response: 'v1.4',
    });
    expect(transcript).toContain(answer.message);
  });

  it('says how to open the voice demo page, naming the key file and not the key', () => {
    expect(transcript).toContain(`Voice: open ${demo.suite.voice.url}/demo in a browser`);
    expect(transcript).toContain(path.join(dataDir, 'voice-api-key'));
  });

  it('prints no credential, token or key', () => {
    const secrets = secretsOfTheRun();
    expect(secrets.length).toBeGreaterThanOrEqual(8);
    for (const secret of secrets) expect(transcript).not.toContain(secret);
    // Nothing shaped like a 32-byte secret in base64url (43 characters) or longer.
    expect(transcript).not.toMatch(/[A-Za-z0-9_-]{40,}/);
  });
});

describe('npm run demo with a port another program holds', () => {
  it('stops at once naming the port and the variable that moves it, starts nothing and keeps the demo folder', async () => {
    const foreign = http.createServer((_req, res) => res.end('{"ok":true}'));
    const taken = await freePort();
    await new Promise<void>((resolve) => foreign.listen(taken, '127.0.0.1', resolve));
    const otherData = mkdtempSync(path.join(os.tmpdir(), 'conduit-demo-taken-'));
    const marker = path.join(otherData, 'demo', 'still-here');
    mkdirSync(path.dirname(marker));
    writeFileSync(marker, '');
    try {
      const [relayPort, voicePort] = [await freePort(), await freePort()];
      const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(
          process.execPath,
          ['--conditions=development', '--import', 'tsx', path.join(REPO_ROOT, 'e2e/suite/run-demo.ts'), '--exit'],
          {
            cwd: REPO_ROOT,
            env: {
              ...process.env,
              CONDUIT_DATA_DIR: otherData,
              SUITE_RELAY_PORT: String(relayPort),
              SUITE_HOST_PORT: String(taken),
              SUITE_VOICE_PORT: String(voicePort),
            },
          },
        );
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        child.on('close', (code) => resolve({ code, stdout, stderr }));
      });
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr).toContain(
        `Port ${taken} (the host) is already in use by another program on 127.0.0.1. Stop that program ` +
          '(a suite started with `npm start` uses the same ports), or start the demo with SUITE_HOST_PORT=<free port>.',
      );
      expect(existsSync(marker)).toBe(true);
      expect(existsSync(path.join(otherData, 'demo', 'relay.sqlite'))).toBe(false);
    } finally {
      foreign.close();
      rmSync(otherData, { recursive: true, force: true });
    }
  });
});
