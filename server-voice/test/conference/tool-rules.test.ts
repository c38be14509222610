import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  checkReference,
  hasDuplicateKeys,
  isValidIdentity,
  isValidMethodName,
  loadRemoteToolPolicy,
  registryName,
  transferTimeoutSeconds,
} from '../../src/conference/tool-rules.js';

interface ToolNameFixtures {
  lk: { identity: string; method: string; registry_name: string }[];
  invalid_methods: string[];
  valid_methods: string[];
}
interface TimeoutFixture {
  configured_timeout_sec: number;
  expected_size: number;
  transfer_timeout_sec: number;
}

// The language-neutral fixtures (the voice spec's derived_fixtures.json), copied into the repo.
const fixtures = JSON.parse(
  readFileSync(new URL('../audio/fixtures/derived_fixtures.json', import.meta.url), 'utf8'),
) as {
  tool_names: ToolNameFixtures;
  binary_transfer_timeouts: TimeoutFixture[];
};

describe('remote tool rules against the derived fixtures', () => {
  it.each(fixtures.tool_names.lk)('registry name of $identity / $method', ({ identity, method, registry_name }) => {
    expect(registryName(identity, method)).toBe(registry_name);
    expect(registryName(identity, method).length).toBeLessThanOrEqual(64);
  });

  it('accepts exactly the valid method names and refuses the invalid ones, untrimmed and unnormalised', () => {
    for (const name of fixtures.tool_names.valid_methods) expect(isValidMethodName(name), name).toBe(true);
    for (const name of fixtures.tool_names.invalid_methods)
      expect(isValidMethodName(name), JSON.stringify(name)).toBe(false);
  });

  it.each(fixtures.binary_transfer_timeouts)(
    'transfer deadline for $expected_size bytes at a configured $configured_timeout_sec s',
    ({ configured_timeout_sec, expected_size, transfer_timeout_sec }) => {
      expect(transferTimeoutSeconds(configured_timeout_sec, expected_size)).toBeCloseTo(transfer_timeout_sec, 9);
    },
  );
});

describe('participant identities', () => {
  it('refuses empty, padded, control, format and lone-surrogate identities and ones over 128 bytes', () => {
    expect(isValidIdentity('client-é')).toBe(true);
    for (const bad of ['', ' alice', 'alice ', 'al\u0000ice', 'al\u200bice', 'al\ud800ice', 'é'.repeat(65)])
      expect(isValidIdentity(bad), JSON.stringify(bad)).toBe(false);
    expect(isValidIdentity('a'.repeat(128))).toBe(true);
  });
});

describe('HERMES_LIVEKIT_REMOTE_TOOL_POLICY', () => {
  const policyText = JSON.stringify({
    tools: [
      { participant_identity: 'alice', tool_name: 'camera.snapshot', tier: 1 },
      { participant_identity: 'alice', tool_name: 'desktop_notify', tier: 2, consent_expires_at: 1_000 },
      { participant_identity: 'alice', tool_name: 'files.delete', tier: 3 },
    ],
  });

  it('decides by exact participant/name entry: tier 1 allows, tier 3 denies, tier 2 until consent expires', () => {
    const policy = loadRemoteToolPolicy(policyText);
    expect(policy.invalid).toBeNull();
    expect(policy.decide('alice', 'camera.snapshot', 0)).toEqual({ allowed: true, tier: 1, reason: 'tier1-allowed' });
    expect(policy.decide('alice', 'files.delete', 0)).toEqual({ allowed: false, tier: 3, reason: 'tier3-denied' });
    expect(policy.decide('alice', 'desktop_notify', 999.5)).toEqual({
      allowed: true,
      tier: 2,
      reason: 'consent-valid',
    });
    // Equality denies; so does a clock that is not a number.
    expect(policy.decide('alice', 'desktop_notify', 1_000).reason).toBe('consent-expired');
    expect(policy.decide('alice', 'desktop_notify', Number.NaN).allowed).toBe(false);
    expect(policy.decide('bob', 'camera.snapshot', 0)).toEqual({ allowed: false, tier: 0, reason: 'not-allowlisted' });
    expect(policy.decide('alice', 'Camera.snapshot', 0).reason).toBe('not-allowlisted');
  });

  it.each([
    ['duplicate keys', '{"tools":[],"tools":[]}'],
    ['an unknown top-level key', '{"tools":[],"extra":1}'],
    ['tier 2 without consent', '{"tools":[{"participant_identity":"a","tool_name":"x","tier":2}]}'],
    ['consent on tier 1', '{"tools":[{"participant_identity":"a","tool_name":"x","tier":1,"consent_expires_at":5}]}'],
    [
      'a duplicate entry',
      '{"tools":[{"participant_identity":"a","tool_name":"x","tier":1},{"participant_identity":"a","tool_name":"x","tier":3}]}',
    ],
    ['an invalid tool name', '{"tools":[{"participant_identity":"a","tool_name":"x..y","tier":1}]}'],
    ['a tier 4', '{"tools":[{"participant_identity":"a","tool_name":"x","tier":4}]}'],
    ['not JSON', '{tools'],
    ['more than 16 KiB', JSON.stringify({ tools: [], pad: 'x'.repeat(17_000) })],
  ])('an invalid policy (%s) denies every tool', (_why, text) => {
    const policy = loadRemoteToolPolicy(text);
    expect(policy.invalid).not.toBeNull();
    expect(policy.decide('a', 'x', 0).allowed).toBe(false);
  });

  it('an absent policy denies everything without being reported invalid', () => {
    const policy = loadRemoteToolPolicy(null);
    expect(policy.invalid).toBeNull();
    expect(policy.decide('alice', 'camera.snapshot', 0).reason).toBe('not-allowlisted');
  });

  it('finds duplicate keys at any depth but not equal keys in sibling objects', () => {
    expect(hasDuplicateKeys('{"a":{"b":1,"c":{"b":2}},"d":[{"b":1},{"b":2}]}')).toBe(false);
    expect(hasDuplicateKeys('{"a":[{"b":1,"b":2}]}')).toBe(true);
    expect(hasDuplicateKeys('{"a\\"":1,"a\\"":2}')).toBe(true);
  });
});

describe('byte-stream references', () => {
  const streamId = '0123456789abcdef0123456789abcdef';
  const reference = {
    type: 'livekit-byte-stream',
    version: 1,
    owner_identity: 'alice',
    stream_id: streamId,
    topic: `hermes-tool-result/${streamId}`,
    mime_type: 'image/png',
    expected_size: 12_582_912,
    text_summary: 'A screenshot.',
  };
  const check = (value: Record<string, unknown>, owner = 'alice') =>
    checkReference(JSON.stringify(value), value, owner);

  it('accepts an exact reference up to 12 MiB', () => {
    expect(check(reference)).toMatchObject({
      ok: true,
      reference: { expectedSize: 12_582_912, mimeType: 'image/png' },
    });
  });

  it.each([
    ['an extra key', { ...reference, extra: 1 }, 'invalid_reference'],
    ['a size over 12 MiB', { ...reference, expected_size: 12_582_913 }, 'invalid_reference'],
    ['a zero size', { ...reference, expected_size: 0 }, 'invalid_reference'],
    ['an upper-case stream id', { ...reference, stream_id: streamId.toUpperCase() }, 'invalid_reference'],
    ['another topic', { ...reference, topic: 'hermes-tool-result/other' }, 'invalid_reference'],
    ['mime parameters', { ...reference, mime_type: 'text/plain; charset=utf-8' }, 'invalid_reference'],
    ['a blank summary', { ...reference, text_summary: '   ' }, 'invalid_reference'],
    ['a control in the summary', { ...reference, text_summary: 'a\u0007b' }, 'invalid_reference'],
    ['an image type not allowed', { ...reference, mime_type: 'image/tiff' }, 'unsupported_image_type'],
  ])('refuses %s', (_why, value, code) => {
    expect(check(value)).toEqual({ ok: false, code });
  });

  it('refuses a reference naming another owner than the RPC answerer', () => {
    expect(check(reference, 'bob')).toEqual({ ok: false, code: 'invalid_owner' });
  });
});
