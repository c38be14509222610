/**
 * server-dashboard/Dockerfile without a Docker engine (none runs here or in CI): every stage is
 * replayed in a folder by contracts/src/dockerfile-replay.ts — each COPY (from the context and `--from`
 * a stage), each `npm ci` checked offline with --dry-run against the packages the lockfile gives those
 * flags and laid out from them, the build steps run (the SDK's bundle among them) — and the service
 * then starts from the final stage's folder alone, on a temporary folder standing for the /hermes
 * volume. What this cannot show (the base image, apt-get, native builds in the image) is in DOCKER.md.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as docker from '@conduit/contracts/dockerfile-replay';
import { freePort } from '@conduit/contracts/testing';

let replay: docker.ReplayedImage;
beforeAll(
  () => void (replay = docker.replayImage(path.resolve(import.meta.dirname, '../..'), 'server-dashboard/Dockerfile')),
  600_000,
);
afterAll(() => replay?.remove());

describe('server-dashboard/Dockerfile, replayed stage by stage', () => {
  it("the final stage's files alone start the service on the mounted home; the health check and conduit work", async () => {
    const hermes = docker.hostPath(replay.image, '/hermes');
    mkdirSync(hermes, { mode: 0o700 });
    const port = await freePort();
    const env = { HERMES_HOME: hermes, CONDUIT_HOST_BIND: '127.0.0.1', CONDUIT_HOST_PORT: String(port) };
    const ready = async (url: string): Promise<boolean> =>
      (await fetch(`${url}/api/plugins/conduit_push/capabilities`)).ok;
    const health = await docker.serveImage(replay.image, { env, port, ready }, async (host) => {
      // The version it reports is read from the package.json beside dist/, which the image keeps.
      const { version } = JSON.parse(readFileSync(docker.hostPath(replay.image, 'package.json'), 'utf8')) as {
        version: string;
      };
      const capabilities = await fetch(`${host.url}/api/plugins/conduit_push/capabilities`);
      expect(await capabilities.json()).toMatchObject({ ok: true, version, loaded_version: version });
      // Its state lives on the volume: the hook runtime file and the standalone token.
      for (const file of ['runtime.json', 'host-token']) {
        expect(existsSync(path.join(hermes, 'conduit-host', file)), file).toBe(true);
      }
      // The conduit command and the hook bridge it loads from bin/ (no service for this state: silent, 0).
      const hook = spawnSync(
        process.execPath,
        ['bin/conduit.mjs', 'hook', '--state', docker.hostPath(replay.image, '/tmp/none'), 'pre_llm_call'],
        {
          cwd: docker.hostPath(replay.image, '.'),
          env: docker.imageEnv(replay.image, env),
          input: '{}',
          encoding: 'utf8',
        },
      );
      expect([hook.status, hook.stdout, hook.stderr]).toEqual([0, '', '']);
    });
    expect(health).toEqual({ serving: 0, stopped: 1 });
  });

  it('keeps the rules of a server image; the SDK is bundled in the build stage and its bundler stays there', () => {
    expect(docker.imageProblems(replay)).toEqual([]);
    const [build, production] = ['build', 'production-dependencies'].map(
      (name) => replay.stages.find((stage) => stage.name === name)?.installs[0]?.packages ?? [],
    );
    expect(build).toEqual(expect.arrayContaining([expect.stringMatching(/^rollup-plugin-dts /)]));
    expect(production).not.toEqual(expect.arrayContaining([expect.stringMatching(/^rollup-plugin-dts /)]));
    expect(production).toEqual(expect.arrayContaining([expect.stringMatching(/^better-sqlite3 /)]));
    expect(existsSync(docker.hostPath(replay.image, '/app/generated/dist/relay.js'))).toBe(true);
    expect(replay.image.workdir).toBe('/app/server-dashboard');
    expect(replay.image.volumes).toEqual(['/hermes']);
    expect(replay.image.env).toMatchObject({ HERMES_HOME: '/hermes', CONDUIT_HOST_PORT: '9119' });
    // No bind address in the image: the service's own default, loopback.
    expect(replay.image.env.CONDUIT_HOST_BIND).toBeUndefined();
  });
});
