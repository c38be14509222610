import { randomBytes } from 'node:crypto';
import type { VoiceConfig } from '../config.js';
import type { Logger } from '../log.js';
import { providersFromConfig } from '../pipeline/providers-from-config.js';
import type { ConferenceConfig } from './conference-config.js';
import { ConferenceGateway } from './conference-gateway.js';

/**
 * Starts Conference mode next to the direct WebRTC endpoint: the same configured agent, speech providers and
 * voice detector settings, one room. Returns the running gateway (stop it on shutdown).
 */
export async function startConference(
  config: VoiceConfig,
  conference: ConferenceConfig,
  logger: Logger,
): Promise<ConferenceGateway> {
  const providers = await providersFromConfig(config, {});
  const gateway = new ConferenceGateway({
    config: conference,
    services: {
      ...providers,
      endpointSettings: config.audio.endpoint,
      trimLeadingSilence: config.audio.ttsTrimLeadingSilence,
      bargeIn: config.bargeIn,
      streamCaptions: config.streamCaptions,
      replyCompletionTimeoutMs: config.replyCompletionTimeoutMs,
      vadThreshold: config.audio.vadThreshold,
      logger,
      randomHex: (bytes) => randomBytes(bytes).toString('hex'),
      delay: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      nowMs: () => performance.now(),
    },
  });
  logger.info('conference_configured', {
    room: conference.room,
    agent_name: conference.agentName ?? '(asked of the model before the first join)',
    remote_tools_toolset: gateway.toolset.enabled() ? 'enabled' : 'not enabled (remote tools hidden from the model)',
    presence_poll_s: conference.presencePollMs / 1000,
    allowed_users: conference.allowAllUsers ? 'all' : conference.allowedUsers.size,
    home_channel: conference.homeChannel,
    remote_tool_policy: gateway.policy.invalid ? 'invalid (all denied)' : gateway.policy.entries.size,
  });
  gateway.start();
  return gateway;
}
