import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CredentialFile } from '../../src/credentials/credential-file.js';
import { credentialPath } from '../../src/credentials/credential-store.js';
import { encodeBase64Url } from '../../src/crypto/base64url.js';
import { deriveE2eKeys } from '../../src/crypto/e2e-keys.js';
import { openNotification } from '../../src/crypto/e2e-device.js';
import type { ContentFreeEvent, HostEvent, SealedEvent } from '@conduit/contracts/relay/events';
import { applyPrivacy, buildOutgoing } from '../../src/crypto/privacy.js';
import { REDACTED_APPROVAL_TEXT, REDACTED_CLARIFY_TEXT, redactedEventId } from '../../src/crypto/redaction.js';

const secret = randomBytes(32);
const kid = randomBytes(16).toString('hex');
const keys = deriveE2eKeys(kid, secret);
const pairing = {
  installationId: '6f0c5a9e-1b7d-4c1e-9d55-0a7a3b0e2f11',
  gatewayId: '9b2f6c1e-3d4a-4e5b-8c7d-1e2f3a4b5c6d',
};
const base: CredentialFile = {
  credential: `${pairing.installationId}.${pairing.gatewayId}.c2VjcmV0c2VjcmV0`,
  installation_id: pairing.installationId,
  gateway_id: pairing.gatewayId,
  gateway_name: 'box Hermes',
  relay_url: 'https://relay.example',
};
const e2e = { kid, secret: encodeBase64Url(secret), created_at: '2026-11-29T10:00:00Z' };
const redactKey = 'ab'.repeat(32);
const now = 1_770_000_000;
const context = { nowSeconds: now, randomBytes: (n: number) => new Uint8Array(randomBytes(n)) };

const approval: HostEvent = {
  event_id: 'approval:3f2a9c',
  type: 'approval.needed',
  plugin_version: '0.37.0',
  plugin_capabilities: ['approval-decisions', 'e2e-v1'],
  session_id: 'sess-1',
  profile: 'default',
  title: 'Approval needed · Infra',
  body: 'rm -rf /srv/cache',
  decision: {
    kind: 'approval',
    session_key: 'agent:main',
    description: 'rm -rf /srv/cache',
    choices: ['once', 'session', 'always', 'deny', 'maybe'],
  },
};
const clarify: HostEvent = {
  event_id: 'input:77aa',
  type: 'input.needed',
  session_id: 'sess-2',
  body: 'Which region?',
  decision: {
    kind: 'clarify',
    request_id: 'conduit-push-0123456789ab',
    question: 'Which region?',
    questions: [
      { qid: 'q0', question: 'Which region?', choices: ['eu', 'us'] },
      { qid: 'q1', question: 'Which services?', choices: ['api', 'web'], multi_select: true },
    ],
  },
};

describe('redaction (redact on)', () => {
  it('drops title and body, uses generic card text, keeps what answering needs, and re-keys the id', () => {
    const out = buildOutgoing(approval, { ...base, redact_content: true, redact_key: redactKey }, context);
    expect(out.mode).toBe('redacted');
    expect(out.body).toEqual({
      event_id: redactedEventId(redactKey, approval.event_id),
      type: 'approval.needed',
      plugin_version: '0.37.0',
      plugin_capabilities: ['approval-decisions', 'e2e-v1'],
      session_id: 'sess-1',
      profile: 'default',
      decision: {
        kind: 'approval',
        description: REDACTED_APPROVAL_TEXT,
        session_key: 'agent:main',
        choices: ['once', 'session', 'always', 'deny'],
      },
    });
    expect(out.body.event_id).toMatch(/^approval:[0-9a-f]{32}$/);
    expect(JSON.stringify(out.body)).not.toMatch(/rm -rf|Infra/);
  });

  it('clarify questions become "Question N" with their qids, choices and multi-select kept', () => {
    const out = buildOutgoing(clarify, { ...base, redact_content: true, redact_key: redactKey }, context);
    expect((out.body as HostEvent).decision).toEqual({
      kind: 'clarify',
      question: REDACTED_CLARIFY_TEXT,
      request_id: 'conduit-push-0123456789ab',
      questions: [
        { question: 'Question 1', qid: 'q0', choices: ['eu', 'us'] },
        { question: 'Question 2', qid: 'q1', choices: ['api', 'web'], multi_select: true },
      ],
    });
  });

  it('approval choices outside once|session|always|deny fall back to once and deny', () => {
    const odd = {
      ...approval,
      decision: { kind: 'approval' as const, session_key: 'k', description: 'd', choices: ['yes'] },
    };
    const out = buildOutgoing(odd, { ...base, redact_content: true, redact_key: redactKey }, context);
    expect((out.body as HostEvent).decision).toMatchObject({ choices: ['once', 'deny'] });
  });

  it('redact off sends the event as built', () => {
    const out = buildOutgoing(approval, { ...base, redact_content: false, redact_key: redactKey }, context);
    expect(out).toEqual({ body: approval, mode: 'plain' });
  });
});

describe('sealing at send time', () => {
  it('an encrypted pairing seals everything; the phone opens it', () => {
    const out = buildOutgoing(approval, { ...base, e2e }, context);
    expect(out.mode).toBe('sealed');
    const body = out.body as SealedEvent;
    expect(Object.keys(body).sort()).toEqual(['e2e', 'event_id', 'plugin_capabilities', 'plugin_version', 'type']);
    expect(JSON.stringify(body)).not.toMatch(/rm -rf|sess-1|Infra/);
    const inner = openNotification(body.e2e, body.type, keys, pairing, now);
    expect(inner).toMatchObject({
      title: approval.title,
      body: approval.body,
      session_id: 'sess-1',
      decision: approval.decision,
    });
  });

  it('redaction and encryption together: the sealed content is the redacted event', () => {
    const out = buildOutgoing(clarify, { ...base, e2e, redact_content: true, redact_key: redactKey }, context);
    const body = out.body as SealedEvent;
    expect(body.clarify).toEqual({ request_id: 'conduit-push-0123456789ab', qids: ['q0', 'q1'], card: true });
    const inner = openNotification(body.e2e, body.type, keys, pairing, now);
    expect(inner).toMatchObject({ session_id: 'sess-2', decision: { question: REDACTED_CLARIFY_TEXT } });
    expect(inner).not.toHaveProperty('body');
  });

  it('plugin.hello is never sealed', () => {
    const hello: HostEvent = {
      event_id: 'hello:abc',
      type: 'plugin.hello',
      plugin_version: '0.37.0',
      profile: 'default',
    };
    expect(buildOutgoing(hello, { ...base, e2e }, context)).toEqual({ body: hello, mode: 'plain' });
  });

  it('a malformed key, or a key of another pairing, sends content-free events and never plaintext', () => {
    for (const broken of [{}, { ...e2e, secret: 'short' }, { ...e2e, gateway_id: 'another-gateway' }]) {
      const out = buildOutgoing(approval, { ...base, e2e: broken, redact_key: redactKey }, context);
      expect(out.mode).toBe('content-free');
      expect(out.body).toEqual({
        event_id: redactedEventId(redactKey, approval.event_id),
        type: 'approval.needed',
        plugin_version: '0.37.0',
        plugin_capabilities: ['approval-decisions', 'e2e-v1'],
      } satisfies ContentFreeEvent);
    }
  });

  it('an event too large to seal goes out content-free under the meta-keyed id', () => {
    const huge = { ...approval, session_id: randomBytes(3000).toString('base64url') };
    const out = buildOutgoing(huge, { ...base, e2e }, context);
    expect(out.mode).toBe('content-free');
    expect(Object.keys(out.body).sort()).toEqual(['event_id', 'plugin_capabilities', 'plugin_version', 'type']);
  });

  it('mints a redact key when one is needed and missing, and says so', () => {
    const out = buildOutgoing(approval, { ...base, redact_content: true }, context);
    expect(out.mintedRedactKey).toMatch(/^[0-9a-f]{64}$/);
    expect(out.body.event_id).toBe(redactedEventId(out.mintedRedactKey ?? '', approval.event_id));
  });
});

describe('applyPrivacy reads the profile at send time', () => {
  let home: string;
  beforeEach(async () => {
    home = await mkdtemp(join(tmpdir(), 'conduit-privacy-'));
  });
  afterEach(() => rm(home, { recursive: true, force: true }));

  it('an event prepared after `redact off` goes out in full, after `redact on` redacted, after a key arrives sealed', async () => {
    const write = (file: CredentialFile) => writeFile(credentialPath(home), JSON.stringify(file));
    const clock = () => now * 1000;
    await write({ ...base, redact_content: true, redact_key: redactKey });
    expect((await applyPrivacy(approval, home, { clock }))?.mode).toBe('redacted');
    await write({ ...base, redact_content: false, redact_key: redactKey });
    const plain = await applyPrivacy(approval, home, { clock });
    expect(plain).toMatchObject({
      mode: 'plain',
      relayUrl: 'https://relay.example',
      credential: base.credential,
      body: approval,
    });
    await write({ ...base, e2e });
    expect((await applyPrivacy(approval, home, { clock }))?.mode).toBe('sealed');
  });

  it('is null for an unpaired profile', async () => {
    expect(await applyPrivacy(approval, home)).toBeNull();
  });

  it('persists a minted redact key so a retry of the same event keeps the same id', async () => {
    await writeFile(credentialPath(home), JSON.stringify({ ...base, redact_content: true }));
    const first = await applyPrivacy(approval, home);
    const second = await applyPrivacy(approval, home);
    expect(first?.body.event_id).toBe(second?.body.event_id);
    const stored = JSON.parse(await readFile(credentialPath(home), 'utf8')) as CredentialFile;
    expect(first?.body.event_id).toBe(redactedEventId(stored.redact_key ?? '', approval.event_id));
  });
});
