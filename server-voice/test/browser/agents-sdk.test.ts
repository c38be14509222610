import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { ScriptedAgent } from '../../src/agent/scripted-agent.js';
import { voiceConfig } from '../../src/config.js';
import { memoryLogger } from '../../src/log.js';
import { ScriptedSpeechToText, ScriptedTextToSpeech } from '../../src/providers/scripted.js';
import { launchChromium } from '../support/chromium.js';

/**
 * The official OpenAI Agents SDK (`@openai/agents-realtime`, its browser bundle) in headless Chromium, on a
 * page served from another origin than the gateway, as a web app would use it: its WebRTC transport posts the
 * offer with its own headers, reads `Location`, sends the whole GA session on the events channel and waits for
 * `session.updated`, then runs a typed turn. Nobody on this team wrote that client.
 */
const KEY = 'agents-sdk-key';
const INSTRUCTIONS = 'Answer in one short sentence.';
const require = createRequire(import.meta.url);
const SDK_ENTRY = require.resolve('@openai/agents-realtime');
const SDK_BUNDLE = path.join(path.dirname(SDK_ENTRY), 'bundle/openai-realtime-agents.umd.js');

interface SafeParser {
  safeParse(value: unknown): { success: boolean };
}

/** What the page reports after its call. */
interface SdkRun {
  error?: string;
  callId?: string;
  connectMs: number;
  events: { type: string; [key: string]: unknown }[];
  history: { type: string; role?: string; status?: string; text: string }[];
}

let app: FastifyInstance;
let gatewayUrl: string;
let pageServer: http.Server;
let pageOrigin: string;
let browser: Browser;
let page: Page;
const agent = new ScriptedAgent(() => [{ delta: 'It is noon ' }, { delta: 'in Oslo.' }]);
const warnings: string[] = [];
let sdkServerEventSchema: SafeParser;

beforeAll(async () => {
  app = await buildApp(voiceConfig({ apiKey: KEY, mediaSender: 'process' }), {
    agent,
    stt: new ScriptedSpeechToText(['unused']),
    tts: new ScriptedTextToSpeech(),
    logger: memoryLogger(),
  });
  gatewayUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  // The web app's own origin: another port is another origin, so every gateway request is cross-origin.
  pageServer = http.createServer((_request, response) => {
    response.setHeader('content-type', 'text/html; charset=utf-8');
    response.end('<!doctype html><title>web app</title><p>web app</p>');
  });
  await new Promise<void>((resolve) => pageServer.listen(0, '127.0.0.1', resolve));
  pageOrigin = `http://127.0.0.1:${(pageServer.address() as AddressInfo).port}`;
  const events = (await import(pathToFileURL(path.join(path.dirname(SDK_ENTRY), 'openaiRealtimeEvents.mjs')).href)) as {
    realtimeServerEventSchema: SafeParser;
  };
  sdkServerEventSchema = events.realtimeServerEventSchema;
  browser = await launchChromium();
  page = await browser.newPage();
  page.on('console', (message) => {
    if (message.type() === 'warning' || message.type() === 'error') warnings.push(message.text());
  });
  await page.goto(`${pageOrigin}/`);
  await page.addScriptTag({ path: SDK_BUNDLE });
});

afterAll(async () => {
  await browser?.close();
  await app?.close();
  await new Promise((resolve) => pageServer?.close(resolve));
});

/** Runs one call in the page: connect, a typed question, its answer, hang up. */
function callWithTheSdk(): Promise<SdkRun> {
  return page.evaluate(
    async ({ url, key, instructions }) => {
      interface SdkItem {
        type: string;
        role?: string;
        status?: string;
        content?: { type: string; text?: string; transcript?: string | null }[];
      }
      interface SdkSession {
        connect(options: { apiKey: string }): Promise<void>;
        sendMessage(text: string): void;
        on(event: 'agent_end', listener: () => void): void;
        history: SdkItem[];
        close(): void;
      }
      interface Sdk {
        OpenAIRealtimeWebRTC: new (options: Record<string, unknown>) => {
          on(event: '*', listener: (event: { type: string }) => void): void;
          callId?: string;
        };
        RealtimeAgent: new (options: Record<string, unknown>) => unknown;
        RealtimeSession: new (agent: unknown, options: Record<string, unknown>) => SdkSession;
        tool(options: Record<string, unknown>): unknown;
      }
      interface AudioGlobals {
        AudioContext: new () => { createMediaStreamDestination(): { stream: unknown } };
        OpenAIAgentsRealtime: Sdk;
      }
      const web = globalThis as unknown as AudioGlobals;
      const sdk = web.OpenAIAgentsRealtime;
      // A silent microphone: the page has no speech to send, only the typed question.
      const silence = new web.AudioContext().createMediaStreamDestination().stream;
      const events: { type: string }[] = [];
      const transport = new sdk.OpenAIRealtimeWebRTC({
        baseUrl: `${url}/v1/realtime/calls`,
        mediaStream: silence,
        useInsecureApiKey: true,
      });
      transport.on('*', (event) => events.push(event));
      const getTime = sdk.tool({
        name: 'get_time',
        description: 'The current time in a city.',
        parameters: {
          type: 'object',
          properties: { city: { type: 'string' } },
          required: ['city'],
          additionalProperties: false,
        },
        strict: true,
        execute: async () => 'noon',
      });
      const agent = new sdk.RealtimeAgent({ name: 'Assistant', instructions, tools: [getTime] });
      const session = new sdk.RealtimeSession(agent, { transport, model: 'gpt-realtime' });
      const started = performance.now();
      try {
        await session.connect({ apiKey: key });
      } catch (error) {
        return { error: String(error), connectMs: performance.now() - started, events, history: [] };
      }
      const connectMs = performance.now() - started;
      const answered = new Promise<void>((resolve) => session.on('agent_end', resolve));
      session.sendMessage('What time is it in Oslo?');
      await answered;
      // The final transcript lands with the item's done event, right after the response ends.
      await new Promise<void>((resolve) => {
        const check = () =>
          events.some((e) => e.type === 'output_audio_buffer.stopped') ? resolve() : setTimeout(check, 20);
        check();
      });
      const history = session.history.map((item) => ({
        type: item.type,
        role: item.role,
        status: item.status,
        text: (item.content ?? []).map((part) => part.text ?? part.transcript ?? '').join(''),
      }));
      const callId = transport.callId;
      session.close();
      return { callId, connectMs, events, history };
    },
    { url: gatewayUrl, key: KEY, instructions: INSTRUCTIONS },
  );
}

describe('the OpenAI Agents SDK (WebRTC transport) from a page on another origin', () => {
  let run: SdkRun;
  beforeAll(async () => {
    run = await callWithTheSdk();
  });

  it('connects across origins: the preflight allows its headers and it reads Location (item 11)', () => {
    expect(run.error).toBeUndefined();
    expect(run.callId).toMatch(/^call_[0-9a-f]{32}$/);
  });

  it('gets session.updated for its full GA session at once, and its instructions and tools reach the agent (items 12, 14)', () => {
    // connect() waits for that acknowledgement and gives up after 5 s with a warning.
    expect(run.connectMs).toBeLessThan(3000);
    expect(warnings.filter((text) => text.includes('session.updated'))).toEqual([]);
    expect(run.events.filter((e) => e.type === 'error')).toEqual([]);
    const updated = run.events.find((e) => e.type === 'session.updated');
    expect(updated).toMatchObject({ session: { instructions: INSTRUCTIONS, tools: [{ name: 'get_time' }] } });
    expect(agent.turns.at(-1)).toMatchObject({ text: 'What time is it in Oslo?', instructions: INSTRUCTIONS });
    expect(agent.turns.at(-1)?.tools.map((tool) => tool.name)).toEqual(['get_time']);
  });

  it('receives only events its GA schemas know, and keeps the conversation in order (item 13)', () => {
    const unknownToSdk = run.events
      .filter((event) => !event.type.startsWith('hermes.') && !sdkServerEventSchema.safeParse(event).success)
      .map((event) => event.type);
    expect(unknownToSdk).toEqual([]);
    const messages = run.history.filter((item) => item.type === 'message');
    expect(messages.map((item) => [item.role, item.text])).toEqual([
      ['user', 'What time is it in Oslo?'],
      ['assistant', 'It is noon in Oslo.'],
    ]);
    expect(messages[1]?.status).toBe('completed');
  });
});
