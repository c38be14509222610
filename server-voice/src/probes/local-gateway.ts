/**
 * The gateway a probe starts when it is not pointed at a running one: the real gateway as a separate process
 * (so the probe's own event loop does not share its timing), with the local fake STT, Hermes API server, Hermes
 * dashboard (slash commands) and TTS servers of src/testing. Their answers are the probe's fixed ones.
 */
import { startFakeHermesDashboard } from '../testing/fake-hermes-dashboard.js';
import { startFakeUpstreams, type FakeUpstreamOptions } from '../testing/fake-upstreams.js';
import { startGatewayProcess } from '../testing/gateway-process.js';

export interface LocalGateway {
  url: string;
  apiKey: string;
  close(): Promise<void>;
}

const LOCAL_KEY = 'probe-key';
const LOCAL_DASHBOARD_TOKEN = 'probe-dashboard-token';

/** Hermes' acknowledgement of `/reasoning <level>` as the fake dashboard gives it. */
export function reasoningAcknowledgement(command: string): { output: string } | { error: string } {
  const level = /^\/reasoning\s+(\S+)/.exec(command)?.[1];
  if (!level) return { error: `unknown command ${command.split(' ')[0] ?? ''}` };
  return { output: `Reasoning effort set to ${level} for this session only.` };
}

export async function startLocalGateway(
  options: Pick<FakeUpstreamOptions, 'transcript' | 'reply'> & {
    silenceSeconds: number;
    /** An OpenAI-compatible model to answer instead of the fake Hermes (the fake tool agent). */
    openAiAgentUrl?: string;
  },
): Promise<LocalGateway> {
  const upstream = await startFakeUpstreams({ transcript: options.transcript, reply: options.reply });
  const dashboard = await startFakeHermesDashboard({ token: LOCAL_DASHBOARD_TOKEN, answer: reasoningAcknowledgement });
  try {
    const gateway = await startGatewayProcess({
      HERMES_REALTIME_API_KEY: LOCAL_KEY,
      HERMES_REALTIME_VAD_BACKEND: 'rms',
      HERMES_REALTIME_SILENCE_DURATION: String(options.silenceSeconds),
      ...(options.openAiAgentUrl
        ? {
            HERMES_REALTIME_AGENT: 'openai',
            HERMES_REALTIME_AGENT_URL: options.openAiAgentUrl,
            HERMES_REALTIME_AGENT_MODEL: 'probe',
          }
        : {
            HERMES_REALTIME_AGENT: 'hermes',
            HERMES_REALTIME_AGENT_URL: upstream.hermesBaseUrl,
            HERMES_REALTIME_AGENT_DASHBOARD_URL: dashboard.url,
            HERMES_REALTIME_AGENT_DASHBOARD_TOKEN: LOCAL_DASHBOARD_TOKEN,
          }),
      HERMES_REALTIME_STT_BASE_URL: upstream.openAiBaseUrl,
      HERMES_REALTIME_TTS_PROVIDER: 'openai',
      HERMES_REALTIME_TTS_BASE_URL: upstream.openAiBaseUrl,
    });
    return {
      url: gateway.url,
      apiKey: LOCAL_KEY,
      close: async () => {
        await gateway.stop();
        await dashboard.close();
        await upstream.close();
      },
    };
  } catch (error) {
    await dashboard.close();
    await upstream.close();
    throw error;
  }
}
