import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { voiceConfig } from '../../src/config.js';
import { memoryLogger } from '../../src/log.js';
import { launchChromium } from '../support/chromium.js';
import type { PageGlobals, PageTrack } from '../support/page-types.js';

const KEY = 'events-channel-key';
let app: FastifyInstance;
let url: string;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  app = await buildApp(voiceConfig({ apiKey: KEY, mediaSender: 'process' }), { logger: memoryLogger() });
  url = await app.listen({ host: '127.0.0.1', port: 0 });
  browser = await launchChromium();
  page = await browser.newPage();
  await page.goto(`${url}/demo`);
});

afterAll(async () => {
  await browser?.close();
  await app?.close();
});

interface Exchange {
  /** What the client sent, and how long after sending its answer arrived (ms, in the page's clock). */
  sent: string;
  answer: string;
  afterMs: number;
}

describe('the events channel with a browser client', () => {
  it('answers client events sent the moment the channel opens, each within 300 ms (no stall)', async () => {
    // As the OpenAI Agents SDK does: session.update on open, then more client events as the answers come in.
    // The gateway's 8th DTLS record used to repeat the sequence number of its handshake's Finished, so the
    // browser dropped it as a replay and SCTP resent it only a second later.
    const exchanges = await page.evaluate(
      async ({ url, key }) => {
        const web = globalThis as unknown as PageGlobals;
        const pc = new web.RTCPeerConnection();
        const microphone = await web.navigator.mediaDevices.getUserMedia({ audio: true });
        pc.addTrack(microphone.getAudioTracks()[0] as PageTrack);
        const channel = pc.createDataChannel('oai-events');
        const script = [
          { type: 'session.update', session: { type: 'realtime', instructions: 'Be brief.' } },
          { type: 'session.update', session: { type: 'realtime', instructions: 'Be very brief.' } },
          { type: 'response.cancel' },
          { type: 'session.update', session: { type: 'realtime', instructions: 'Be short.' } },
          { type: 'response.cancel' },
        ];
        const results: { sent: string; answer: string; afterMs: number }[] = [];
        let sentAt = 0;
        const sendNext = () => {
          const next = script[results.length];
          if (!next) return;
          sentAt = performance.now();
          channel.send(JSON.stringify(next));
        };
        const finished = new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`answers so far: ${JSON.stringify(results)}`)), 20_000);
          channel.onmessage = (message) => {
            const event = JSON.parse(String(message.data)) as { type: string };
            if (event.type !== 'session.updated' && event.type !== 'error') return;
            const sent = (script[results.length] as { type: string }).type;
            results.push({ sent, answer: event.type, afterMs: performance.now() - sentAt });
            if (results.length === script.length) {
              clearTimeout(timer);
              resolve();
            } else sendNext();
          };
        });
        channel.onopen = sendNext;
        await pc.setLocalDescription(await pc.createOffer());
        const response = await fetch(`${url}/v1/realtime/calls`, {
          method: 'POST',
          body: pc.localDescription?.sdp ?? '',
          headers: { 'content-type': 'application/sdp', authorization: `Bearer ${key}` },
        });
        await pc.setRemoteDescription({ type: 'answer', sdp: await response.text() });
        try {
          await finished;
        } finally {
          pc.close();
          for (const track of microphone.getTracks()) track.stop();
        }
        return results;
      },
      { url, key: KEY },
    );
    const answers: Exchange[] = exchanges;
    expect(answers.map((e) => [e.sent, e.answer])).toEqual([
      ['session.update', 'session.updated'],
      ['session.update', 'session.updated'],
      ['response.cancel', 'error'],
      ['session.update', 'session.updated'],
      ['response.cancel', 'error'],
    ]);
    for (const exchange of answers) expect(exchange.afterMs).toBeLessThan(300);
  });
});
