import type { AgentBackend } from '../agent/agent-backend.js';
import { EchoAgent } from '../agent/echo-agent.js';
import { HermesRunsAgent } from '../agent/hermes-runs-agent.js';
import { OpenAiChatAgent } from '../agent/openai-chat-agent.js';
import { EnergyDetectorFactory } from '../audio/energy-detector.js';
import { SileroDetectorFactory } from '../audio/silero.js';
import type { VoiceDetectorFactory } from '../audio/types.js';
import { ConfigError, type AgentConfig, type VoiceConfig } from '../config.js';
import { warmUpTurnPath, type WarmedPart } from '../media/warm-up.js';
import { speechProvidersFromEnv } from '../providers/config.js';
import type { SpeechSelection } from '../providers/hermes-speech.js';
import { SpeechProviderError, type SpeechToText, type TextToSpeech } from '../providers/types.js';
import { UnconfiguredSpeechToText } from './unconfigured-stt.js';

export interface GatewayProviders {
  agent: AgentBackend;
  stt: SpeechToText;
  tts: TextToSpeech;
  detectorFactory: VoiceDetectorFactory;
}

export function agentFromConfig(agent: AgentConfig): AgentBackend {
  switch (agent.kind) {
    case 'echo':
      return new EchoAgent();
    case 'hermes':
      return new HermesRunsAgent({ baseUrl: agent.baseUrl, apiKey: agent.apiKey, commands: agent.commands });
    case 'openai':
      return new OpenAiChatAgent({ baseUrl: agent.baseUrl, apiKey: agent.apiKey, model: agent.model });
  }
}

/**
 * The agent, speech providers and voice detector a gateway runs with: from the configuration, unless a test
 * or benchmark passes its own. A Silero model that is missing or fails its pinned checksum fails startup
 * (there is no silent fallback to the energy gate).
 */
export async function providersFromConfig(
  config: VoiceConfig,
  overrides: Partial<GatewayProviders>,
): Promise<GatewayProviders> {
  let speech: { stt: SpeechToText | null; tts: TextToSpeech } | null = null;
  if (!overrides.stt || !overrides.tts) {
    try {
      speech = speechProvidersFromEnv(config.speechEnv);
    } catch (error) {
      if (error instanceof SpeechProviderError) throw new ConfigError(error.message);
      throw error;
    }
  }
  let detectorFactory = overrides.detectorFactory;
  if (!detectorFactory) {
    if (config.audio.vadBackend === 'silero') {
      try {
        detectorFactory = await SileroDetectorFactory.load(config.audio.vadThreshold, config.audio.vadModelPath);
      } catch (error) {
        throw new ConfigError(`Silero voice detection cannot start: ${error instanceof Error ? error.message : error}`);
      }
    } else {
      detectorFactory = new EnergyDetectorFactory();
    }
  }
  return {
    agent: overrides.agent ?? agentFromConfig(config.agent),
    stt: overrides.stt ?? speech?.stt ?? new UnconfiguredSpeechToText(),
    tts: overrides.tts ?? (speech as { tts: TextToSpeech }).tts,
    detectorFactory,
  };
}

/** The speech choice discovery and the start-up log report: the configuration's, or a provider passed in. */
export function speechInUse(config: VoiceConfig, overrides: Partial<GatewayProviders>): SpeechSelection {
  return {
    stt: overrides.stt ? { source: 'override', provider: overrides.stt.label } : config.speech.stt,
    tts: overrides.tts ? { source: 'override', provider: overrides.tts.label } : config.speech.tts,
  };
}

/**
 * Warms a turn's code paths before the gateway listens (`warmUpTurnPath`), with the speech
 * providers and an OpenAI-compatible agent, built again from the same settings with their requests sent to a
 * local stand-in. Providers a test or benchmark passed in are left alone.
 */
export function warmUpConfiguredTurnPath(
  config: VoiceConfig,
  overrides: Partial<GatewayProviders>,
): Promise<WarmedPart[]> {
  const agent = config.agent;
  return warmUpTurnPath({
    ...(overrides.stt ? {} : { stt: (fetchImpl) => speechProvidersFromEnv(config.speechEnv, fetchImpl).stt }),
    ...(overrides.tts ? {} : { tts: (fetchImpl) => speechProvidersFromEnv(config.speechEnv, fetchImpl).tts }),
    ...(overrides.agent || agent.kind !== 'openai'
      ? {}
      : {
          agent: (fetchImpl) =>
            new OpenAiChatAgent({ baseUrl: agent.baseUrl, apiKey: agent.apiKey, model: agent.model, fetch: fetchImpl }),
        }),
  });
}
