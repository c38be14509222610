/**
 * compose.yaml at the repository root, read as Compose reads it (YAML), against the rules DOCKER.md
 * states: every service builds from a Dockerfile that exists and has a HEALTHCHECK, published ports
 * are on 127.0.0.1, the images' volumes are named volumes by default, the `postgres` profile adds
 * PostgreSQL and the relay's DATABASE_URL is wired to it as DOCKER.md shows, and no secret is written
 * in the file. No Docker engine and no Compose plugin run here (only the docker client), so Compose's own
 * `docker compose config` is not run: DOCKER.md says so.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseDockerfile } from '@conduit/contracts/dockerfile-replay';
import { REPO_ROOT } from '../suite/launch.js';

interface Service {
  build?: { context: string; dockerfile: string };
  image?: string;
  profiles?: string[];
  network_mode?: string;
  user?: string;
  env_file?: { path: string; required: boolean }[];
  environment?: Record<string, string>;
  secrets?: string[];
  volumes?: string[];
  ports?: string[];
  depends_on?: Record<string, { condition: string; required?: boolean }>;
  healthcheck?: { test: string[] };
}

interface Compose {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
  secrets: Record<string, { file: string }>;
}

const compose = parse(readFileSync(path.join(REPO_ROOT, 'compose.yaml'), 'utf8')) as Compose;
const docs = readFileSync(path.join(REPO_ROOT, 'DOCKER.md'), 'utf8');
const built = Object.entries(compose.services).filter(([, service]) => service.build);

function dockerfileOf(service: Service): string {
  return path.join(REPO_ROOT, service.build?.context ?? '', service.build?.dockerfile ?? '');
}

/** The instructions of a Dockerfile's last stage. */
function finalStage(service: Service): { op: string; text: string }[] {
  const instructions = parseDockerfile(readFileSync(dockerfileOf(service), 'utf8'));
  const from = instructions.map((instruction) => instruction.op).lastIndexOf('FROM');
  return instructions.slice(from);
}

/** `${NAME:-default}` → the default Compose uses when NAME is not set. */
function withDefaults(value: string): string {
  return value.replace(/\$\{[A-Z_]+(?::-([^}]*))?\}/g, (_, fallback: string | undefined) => fallback ?? '');
}

function isGitIgnored(file: string): boolean {
  return spawnSync('git', ['check-ignore', '-q', file], { cwd: REPO_ROOT }).status === 0;
}

describe('compose.yaml', () => {
  it('runs the relay, the host service and the voice gateway, each from its Dockerfile with a health check', () => {
    expect(built.map(([name, service]) => [name, service.build])).toEqual([
      ['relay', { context: '.', dockerfile: 'server-relay/Dockerfile' }],
      ['host', { context: '.', dockerfile: 'server-dashboard/Dockerfile' }],
      ['voice', { context: '.', dockerfile: 'server-voice/Dockerfile' }],
    ]);
    for (const [name, service] of built) {
      expect(existsSync(dockerfileOf(service)), name).toBe(true);
      expect(
        finalStage(service).some((instruction) => instruction.op === 'HEALTHCHECK'),
        name,
      ).toBe(true);
      // Every service of ours runs by default; only PostgreSQL waits for its profile.
      expect(service.profiles, name).toBeUndefined();
    }
    expect(compose.services.postgres?.healthcheck?.test).toEqual(expect.arrayContaining(['pg_isready']));
  });

  it('publishes every port on 127.0.0.1 only, to the port the image listens on', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      for (const port of service.ports ?? []) {
        expect(port, name).toMatch(/^127\.0\.0\.1:\d+:\d+$/);
        const exposed = finalStage(service).find((instruction) => instruction.op === 'EXPOSE')?.text;
        expect(port.split(':')[2], name).toBe(exposed);
      }
    }
    // The host service shares the machine's network (Hermes reaches its hooks and MCP on loopback), so
    // it has no port mapping and binds loopback itself unless told otherwise.
    const host = compose.services.host;
    expect(host?.network_mode).toBe('host');
    expect(host?.ports).toBeUndefined();
    expect(withDefaults(host?.environment?.CONDUIT_HOST_BIND ?? '')).toBe('127.0.0.1');
    expect(compose.services.postgres?.ports).toBeUndefined();
  });

  it("mounts each image's volume, a named volume by default: the relay's SQLite file and the Hermes home", () => {
    for (const [name, service] of built) {
      const volumes = finalStage(service)
        .filter((instruction) => instruction.op === 'VOLUME')
        .flatMap((instruction) => JSON.parse(instruction.text) as string[]);
      for (const volume of volumes) {
        const mount = service.volumes?.find((entry) => entry.endsWith(`:${volume}`));
        expect(mount, `${name} ${volume}`).toBeDefined();
        expect(Object.keys(compose.volumes), name).toContain(withDefaults(mount ?? '').split(':')[0]);
      }
    }
    expect(compose.services.relay?.environment?.DATA_PATH).toBe('/data/relay.sqlite');
  });

  it('has a postgres profile that adds PostgreSQL, and the relay reaches it with the DATABASE_URL DOCKER.md gives', () => {
    const postgres = compose.services.postgres;
    const relay = compose.services.relay;
    expect(postgres?.profiles).toEqual(['postgres']);
    expect(relay?.depends_on?.postgres).toEqual({ condition: 'service_healthy', required: false });
    // Empty by default (SQLite at DATA_PATH); DOCKER.md's .env sets it to the profile's database.
    expect(relay?.environment?.DATABASE_URL).toBe('${RELAY_DATABASE_URL:-}');
    const documented = /^RELAY_DATABASE_URL=(.+)$/m.exec(docs)?.[1];
    const { POSTGRES_USER, POSTGRES_DB } = postgres?.environment ?? {};
    expect(documented).toBe(`postgresql://${POSTGRES_USER}:\${POSTGRES_PASSWORD}@postgres:5432/${POSTGRES_DB}`);
    expect(postgres?.environment?.POSTGRES_PASSWORD).toBe('${POSTGRES_PASSWORD:-}');
  });

  it('writes no secret: tokens, keys and passwords come from env files, compose secrets or .env, all git-ignored', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      for (const [variable, value] of Object.entries(service.environment ?? {})) {
        if (/PASSWORD|TOKEN|SECRET|KEY|DATABASE_URL/.test(variable)) {
          // An interpolation with no default, or a file Compose mounts as a secret.
          expect(value, `${name} ${variable}`).toMatch(/^(\$\{[A-Z_]+(:-)?\}|\/run\/secrets\/[a-z_]+)$/);
        }
      }
      for (const file of service.env_file ?? []) {
        expect(isGitIgnored(file.path), file.path).toBe(true);
        expect(existsSync(path.join(REPO_ROOT, `${file.path}.example`)), `${file.path}.example`).toBe(true);
      }
      for (const secret of service.secrets ?? []) expect(Object.keys(compose.secrets)).toContain(secret);
    }
    for (const { file } of Object.values(compose.secrets)) {
      expect(isGitIgnored(withDefaults(file)), file).toBe(true);
      expect(readFileSync(path.join(REPO_ROOT, '.dockerignore'), 'utf8')).toMatch(/^\*\*\/secrets$/m);
    }
    expect(isGitIgnored('.env')).toBe(true);
    // No credentials in a URL anywhere in the file.
    expect(readFileSync(path.join(REPO_ROOT, 'compose.yaml'), 'utf8')).not.toMatch(/:\/\/[^:/\s]+:[^@$\s]+@/);
  });
});
