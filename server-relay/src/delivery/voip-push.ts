import type { ApnsNotification, ApnsResult } from '../apns/types.js';
import type { RelayContext } from '../relay-context.js';

/** Which PushKit token of an installation a VoIP push goes to. */
export type VoipDevice = 'phone' | 'watch';

/**
 * APNs refusing the PushKit token itself. For the phone DeviceTokenNotForTopic counts too (the
 * reference's VOIP_TOKEN_GONE); for the Watch it is the operator's APNS_WATCH_TOPIC that is wrong,
 * not the token, so the Watch keeps it (reference 0.11, and TopicDisallowed likewise).
 */
function tokenRefused(device: VoipDevice, result: ApnsResult): boolean {
  if (result.status === 410 || result.reason === 'BadDeviceToken' || result.reason === 'Unregistered') return true;
  return device === 'phone' && result.reason === 'DeviceTokenNotForTopic';
}

const SETTING_FOR: Record<VoipDevice, string> = { phone: 'APNS_TOPIC', watch: 'APNS_WATCH_TOPIC' };

/**
 * Sends one VoIP push (a call ring to the phone or the Watch, or a ring's stop push) and says
 * whether APNs took it. A refused token is forgotten (only if the device has not registered a newer
 * one meanwhile); any other failure leaves it for the next call.
 *
 * The log lines are the reference's, word for word, because operators alert on them: `message`
 * `apns voip send threw` / `apns voip send refused` with `device` (and `status`, `reason`),
 * `apns voip topic refused, check APNS_TOPIC|APNS_WATCH_TOPIC` with `topic`,
 * `apns key not allowed for this topic` with `topic`, `watch voip sent` with `device: 'watch'`, and
 * `voip token clear failed` with `device` and `error` when forgetting a refused token fails.
 * The installation id is added to each; nothing is renamed.
 */
export async function sendVoipPush(
  context: RelayContext,
  target: { installationId: string; device: VoipDevice; token: string },
  push: ApnsNotification,
): Promise<boolean> {
  const { installationId, device, token } = target;
  let result: ApnsResult;
  try {
    result = await context.apns.send(token, push);
  } catch (error) {
    context.log('error', 'apns voip send threw', {
      device,
      error: error instanceof Error ? error.message : String(error),
      installation: installationId,
    });
    return false;
  }
  if (result.ok) {
    if (device === 'watch') context.log('info', 'watch voip sent', { device, installation: installationId });
    return true;
  }
  context.log('warn', 'apns voip send refused', {
    device,
    status: result.status,
    reason: result.reason,
    installation: installationId,
  });
  if (result.reason === 'DeviceTokenNotForTopic') {
    // Every device would lose its token this way if the `.voip` topic were wrong for the app: say so
    // where an operator looks.
    context.log('warn', `apns voip topic refused, check ${SETTING_FOR[device]}`, { topic: push.topic });
  }
  if (result.reason === 'TopicDisallowed') {
    // A topic-specific .p8 key that lists only the iPhone app refuses every Watch push this way.
    context.log('warn', 'apns key not allowed for this topic', { device, topic: push.topic });
  }
  if (tokenRefused(device, result)) {
    try {
      await context.store.clearTokenIfUnchanged(
        installationId,
        device === 'watch' ? 'watchVoipToken' : 'voipToken',
        token,
      );
    } catch (error) {
      // The call still goes (as an alert); the next refused call clears it.
      context.log('error', 'voip token clear failed', {
        device,
        error: error instanceof Error ? error.message : String(error),
        installation: installationId,
      });
    }
  }
  return false;
}
