import { describe, expect, it } from 'vitest';
import { isCredentialSafeRelayUrl, isLoopbackHost, mayCarryCredentials } from '../../src/kernel/loopback.js';
import { normalizeRelayBaseUrl } from '../../src/messenger/base-url.js';
import { credentialRelayUrl } from '../../src/pairing/relay-url.js';

/**
 * One loopback rule for the whole service. Before it there were three copies that disagreed; the
 * comment on each row says which copy answered otherwise (delivery = delivery/relay-url.ts, pairing =
 * pairing/relay-url.ts, messenger = messenger/base-url.ts).
 */
const HOSTS: [host: string, loopback: boolean, note?: string][] = [
  ['localhost', true],
  ['LOCALHOST', true, 'messenger compared case-sensitively (its caller lowercased first)'],
  ['app.localhost', true, 'messenger refused *.localhost'],
  ['127.0.0.1', true],
  ['127.8.9.1', true],
  ['127.255.255.254', true],
  ['::1', true],
  ['[::1]', true],
  ['0:0:0:0:0:0:0:1', true, 'delivery and messenger refused the long form'],
  ['[0:0:0:0:0:0:0:1]', true, 'delivery and messenger refused the long form'],
  ['::ffff:127.0.0.1', true, 'a dual-stack socket peer; pairing and messenger refused it'],
  ['::ffff:7f00:1', true, 'the same address as the URL parser writes it; every copy refused it'],
  ['[::ffff:7f01:203]', true, '127.1.2.3 mapped; every copy refused it'],
  ['localhost.', false],
  ['localhost.example.com', false],
  ['notlocalhost', false],
  ['127.1', false, 'not an address literal (the URL parser expands it to 127.0.0.1 first)'],
  ['128.0.0.1', false],
  ['0.0.0.0', false],
  ['::', false],
  ['::127.0.0.1', false, 'IPv4-compatible, not IPv4-mapped: not routed to loopback'],
  ['::ffff:10.0.0.1', false],
  ['::ffff:a00:1', false],
  ['10.0.0.1', false],
  ['192.168.1.2', false],
  ['100.64.0.1', false],
  ['relay.local', false],
  ['', false],
];

describe('the loopback rule', () => {
  it.each(HOSTS)('%s → %s', (host, loopback) => {
    expect(isLoopbackHost(host)).toBe(loopback);
  });
});

/** The same host as a URL authority: IPv6 needs brackets. */
function urlHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

describe('the credential-URL rule is the same for delivery, pairing and the messenger', () => {
  const urlHosts = HOSTS.filter(([host]) => host !== '' && host !== '::' && host !== '127.1' && host !== 'localhost.');

  it.each(urlHosts)('plain http to %s may carry a credential: %s', (host, loopback) => {
    const raw = `http://${urlHost(host)}:9120`;
    expect(isCredentialSafeRelayUrl(raw)).toBe(loopback);
    expect(mayCarryCredentials(new URL(raw))).toBe(loopback);
    expect(succeeds(() => credentialRelayUrl(raw))).toBe(loopback);
    expect(succeeds(() => normalizeRelayBaseUrl(raw))).toBe(loopback);
  });

  it('https anywhere may carry a credential; other schemes and userinfo never', () => {
    for (const raw of ['https://push.example.com', 'https://192.168.1.4:9120', 'https://[2001:db8::1]']) {
      expect([raw, isCredentialSafeRelayUrl(raw)]).toEqual([raw, true]);
    }
    for (const raw of ['ftp://localhost', 'ws://127.0.0.1', 'https://user:pw@x', 'http://u@localhost', 'nonsense']) {
      expect([raw, isCredentialSafeRelayUrl(raw)]).toEqual([raw, false]);
    }
  });

  it('the URL parser’s own forms of a loopback address count as loopback', () => {
    // 127.1 and [::ffff:127.0.0.1] are rewritten to 127.0.0.1 and [::ffff:7f00:1] before the rule sees them.
    expect(isCredentialSafeRelayUrl('http://127.1:9120')).toBe(true);
    expect(isCredentialSafeRelayUrl('http://[::ffff:127.0.0.1]:9120')).toBe(true);
    expect(isCredentialSafeRelayUrl('http://LocalHost:9120')).toBe(true);
  });
});

function succeeds(run: () => unknown): boolean {
  try {
    run();
    return true;
  } catch {
    return false;
  }
}
