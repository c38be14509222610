import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { contentFreeEvent, hostEvent, postEvent, sealedEvent } from '@conduit/contracts/relay/events';
import type { CredentialFile } from '../../src/credentials/credential-file.js';
import { encodeBase64Url } from '../../src/crypto/base64url.js';
import { buildOutgoing, type PrivacyMode } from '../../src/crypto/privacy.js';
import { approvalDecision, buildEvent, clarifyDecision, normaliseClarify } from '../../src/notifier/events.js';
import { pluginHelloEvent } from '../../src/pairing/plugin-hello.js';
import { testEvent } from '../../src/pairing/test-push.js';

/**
 * The host→relay event payload is declared once, in contracts/src/relay/events.ts. Whatever the host
 * builds, and whatever leaves it after redaction and sealing, is exactly that shape (parsing strips
 * nothing) and is a body the relay's POST /v1/events contract accepts.
 */
const installationId = '6f0c5a9e-1b7d-4c1e-9d55-0a7a3b0e2f11';
const gatewayId = '9b2f6c1e-3d4a-4e5b-8c7d-1e2f3a4b5c6d';
const secret = randomBytes(32);
const plain: CredentialFile = {
  credential: `${installationId}.${gatewayId}.c2VjcmV0c2VjcmV0`,
  installation_id: installationId,
  gateway_id: gatewayId,
  gateway_name: 'box Hermes',
  relay_url: 'https://relay.example',
};
const e2e = {
  kid: randomBytes(16).toString('hex'),
  secret: encodeBase64Url(secret),
  created_at: '2026-11-29T10:00:00Z',
};
const redactKey = 'cd'.repeat(32);
const CREDENTIALS: Record<PrivacyMode, CredentialFile> = {
  plain,
  redacted: { ...plain, redact_content: true, redact_key: redactKey },
  sealed: { ...plain, e2e },
  'content-free': { ...plain, e2e: { ...e2e, secret: 'short' }, redact_key: redactKey },
};
const context = {
  nowSeconds: Math.floor(Date.now() / 1000),
  randomBytes: (n: number) => new Uint8Array(randomBytes(n)),
};

const clarify = normaliseClarify({
  questions: [
    { id: 'region', question: 'Which region?', options: ['eu', 'us'] },
    { question: 'Which services?', choices: ['api', 'web'], multi_select: true },
  ],
});
const approval = approvalDecision('agent:main:s1', 'rm -rf build');
const EVENTS = {
  approval: buildEvent({
    eventId: 'approval:0123456789abcdef',
    type: 'approval.needed',
    pluginVersion: '0.1.0',
    sessionId: 'agent:main:s1',
    profile: 'work',
    title: 'Approval needed · Infra',
    body: 'rm -rf build',
    ...(approval ? { decision: { ...approval, request_id: 'conduit-approval-0123' } } : {}),
  }),
  clarify: buildEvent({
    eventId: 'input:0123456789abcdef',
    type: 'input.needed',
    pluginVersion: '0.1.0',
    sessionId: 's2',
    body: 'Which region?',
    ...(clarify ? { decision: clarifyDecision('conduit-push-0123456789ab', clarify) } : {}),
  }),
  reply: buildEvent({
    eventId: 'response:0123456789ab',
    type: 'response.ready',
    pluginVersion: '0.1.0',
    body: 'Done.',
  }),
  hello: pluginHelloEvent({ version: '0.1.0', capabilities: ['version-reporting'] }, 'default'),
  test: testEvent({ version: '0.1.0', capabilities: ['version-reporting'] }, 'work'),
};

describe('the host event payload has one declaration', () => {
  it.each(Object.entries(EVENTS))('the %s event the host builds is a contract hostEvent', (_name, event) => {
    expect(hostEvent.parse(event)).toEqual(event);
  });

  for (const mode of Object.keys(CREDENTIALS) as PrivacyMode[]) {
    it.each(Object.entries(EVENTS))(`the %s event leaves ${mode} in the contract's shape`, (name, event) => {
      const out = buildOutgoing(event, CREDENTIALS[mode], context);
      // plugin.hello is never sealed nor emptied: it carries only the version.
      expect(out.mode).toBe(name === 'hello' && mode !== 'redacted' ? 'plain' : mode);
      const schema = out.mode === 'sealed' ? sealedEvent : out.mode === 'content-free' ? contentFreeEvent : hostEvent;
      expect(schema.parse(out.body)).toEqual(out.body);
      expect(postEvent.body?.safeParse(out.body).success).toBe(true);
    });
  }
});
