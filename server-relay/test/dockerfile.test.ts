/**
 * server-relay/Dockerfile without a Docker engine (none runs here or in CI): every stage is replayed in
 * a folder by contracts/src/dockerfile-replay.ts — each COPY (from the context and `--from` a stage),
 * each `npm ci` checked offline with --dry-run against the packages the lockfile gives those flags and
 * laid out from them, the build step run — and the relay then boots from the final stage's folder
 * alone: its production-only node_modules, the bundle and the migrations, nothing of the checkout.
 * What this cannot show (the base image, apt-get, native builds in the image) is in DOCKER.md.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as docker from '@conduit/contracts/dockerfile-replay';
import { freePort } from '@conduit/contracts/testing';
import { RELAY_DIR } from './support/relay-process.js';

let replay: docker.ReplayedImage;
beforeAll(() => void (replay = docker.replayImage(path.resolve(RELAY_DIR, '..'), 'server-relay/Dockerfile')), 600_000);
afterAll(() => replay?.remove());

describe('server-relay/Dockerfile, replayed stage by stage', () => {
  it('holds the bundle and the migrations it finds through @conduit/prisma, nothing else built', () => {
    expect(replay.stages.map((stage) => stage.name)).toEqual([
      'manifests',
      'build',
      'production-dependencies',
      undefined,
    ]);
    expect(readFileSync(docker.hostPath(replay.image, 'dist/main.js'), 'utf8')).toMatch(/^\/\/ The relay bundled by/);
    for (const provider of ['sqlite', 'postgres']) {
      expect(existsSync(docker.hostPath(replay.image, `/app/prisma/migrations/${provider}`))).toBe(true);
    }
    expect(existsSync(docker.hostPath(replay.image, '/app/contracts/dist'))).toBe(false);
    expect(existsSync(docker.hostPath(replay.image, '/app/prisma/dist'))).toBe(false);
    expect(replay.image.volumes).toEqual(['/data']);
    expect(path.posix.dirname(replay.image.env.DATA_PATH ?? '')).toBe('/data');
  });

  it("the final stage's files alone boot the relay; its health check and storage command work", async () => {
    // What the image's `RUN mkdir -p /data …` makes.
    mkdirSync(docker.hostPath(replay.image, '/data'), { mode: 0o700 });
    const port = await freePort();
    const env = {
      HOST: '127.0.0.1',
      PORT: String(port),
      DATA_PATH: docker.hostPath(replay.image, replay.image.env.DATA_PATH ?? ''),
      PUBLIC_URL: 'https://relay.example.test',
      APNS_TOPIC: 'com.example.conduit',
      APNS_MODE: 'accept',
    };
    const ready = async (url: string): Promise<boolean> => (await fetch(`${url}/healthz`)).ok;
    const health = await docker.serveImage(replay.image, { env, port, ready }, async () => {
      expect(existsSync(env.DATA_PATH)).toBe(true);
      const storage = spawnSync('npm', ['run', '--silent', 'storage:status'], {
        cwd: docker.hostPath(replay.image, '.'),
        env: docker.imageEnv(replay.image, env),
        encoding: 'utf8',
      });
      expect(storage.status, storage.stderr).toBe(0);
      expect(JSON.parse(storage.stdout)).toMatchObject({ installations: { total: 0 } });
    });
    expect(health).toEqual({ serving: 0, stopped: 1 });
  });

  it('keeps the rules of a server image: production dependencies only, as node, on Node 24', () => {
    expect(docker.imageProblems(replay)).toEqual([]);
    const production = replay.stages.find((stage) => stage.name === 'production-dependencies')?.installs[0];
    expect(production?.packages).toEqual(expect.arrayContaining([expect.stringMatching(/^better-sqlite3 /)]));
    expect([replay.image.user, replay.image.workdir]).toEqual(['node', '/app/server-relay']);
  });
});
