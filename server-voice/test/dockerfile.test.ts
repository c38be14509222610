/**
 * server-voice/Dockerfile without a Docker engine (none runs here or in CI): every stage is replayed in
 * a folder by contracts/src/dockerfile-replay.ts — each COPY (from the context and `--from` a stage),
 * each `npm ci` checked offline with --dry-run against the packages the lockfile gives those flags and
 * laid out from them, the build step run — and the gateway then starts from the final stage's folder
 * alone, with its default providers (Silero on ONNX Runtime, espeak-ng, the media sender process), so
 * the native and WebAssembly packages it loads at start come from the production install. What this
 * cannot show (the base image, apt-get, UDP through Docker's network) is in DOCKER.md.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as docker from '@conduit/contracts/dockerfile-replay';
import { freePort } from '@conduit/contracts/testing';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
let replay: docker.ReplayedImage;
beforeAll(() => void (replay = docker.replayImage(REPO, 'server-voice/Dockerfile')), 600_000);
afterAll(() => replay?.remove());

describe('server-voice/Dockerfile, replayed stage by stage', () => {
  it('keeps the rules of a server image; the SDKs the wire tests use stay out of it', () => {
    expect(docker.imageProblems(replay)).toEqual([]);
    const production = replay.stages.find((stage) => stage.name === 'production-dependencies')?.installs[0];
    // The OpenAI Agents SDK the tests check the wire against, and the browser driver: dev dependencies.
    const devTools = production?.packages.filter((item) => /^(@openai\/agents-realtime|playwright-core) /.test(item));
    expect(devTools).toEqual([]);
    expect(production?.packages).toEqual(
      expect.arrayContaining([expect.stringMatching(/^onnxruntime-node /), expect.stringMatching(/^@evan\/opus /)]),
    );
    expect(replay.image.workdir).toBe('/app/server-voice');
    expect(replay.image.env).toMatchObject({ HERMES_REALTIME_HOST: '0.0.0.0', HERMES_REALTIME_PORT: '9130' });
    expect(replay.image.exposed).toEqual(['9130']);
  });

  it("the final stage's files alone start the gateway with its media sender; the health check and demo page work", async () => {
    const port = await freePort();
    const env = {
      HERMES_REALTIME_HOST: '127.0.0.1',
      HERMES_REALTIME_PORT: String(port),
      HERMES_REALTIME_API_KEY: 'image-key',
    };
    const ready = async (url: string): Promise<boolean> => (await fetch(`${url}/v1/realtime/discovery`)).status === 401;
    const health = await docker.serveImage(replay.image, { env, port, ready }, async (voice) => {
      const discovery = await fetch(`${voice.url}/v1/realtime/discovery`, {
        headers: { authorization: 'Bearer image-key' },
      });
      expect(discovery.status).toBe(200);
      expect(await (await fetch(`${voice.url}/demo`)).text()).toContain('<html');
      // It listens after its warm-up, which loaded the providers it names, and its media sender started.
      for (const line of ['gateway_ready', 'media_sender_started']) expect(voice.output()).toContain(line);
    });
    expect(health).toEqual({ serving: 0, stopped: 1 });
  });
});
