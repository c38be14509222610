import { e2eState, isPaired, relayUrlOf } from '../credentials/credential-file.js';
import { readCredentials } from '../credentials/credential-store.js';
import { openSealedAnswer, openSealedAnswers } from '../crypto/e2e-answer.js';
import { keysFromRecord } from '../crypto/e2e-keys.js';
import { applyPrivacy } from '../crypto/privacy.js';
import type { ClarifyPairing } from '../cards/clarify-loop.js';
import type { Clock } from '../clock.js';
import type { ProfileScope } from '../notifier/notifier.js';
import type { PrepareEvent } from './relay-sender.js';

/**
 * The notifier's view of a profile's pairing, through the pairing/crypto modules: the credential file
 * read at send time, redaction and sealing by `applyPrivacy`, sealed clarify answers opened with the
 * pairing's E2E key. Nothing here re-implements those rules.
 */
export function privacyPrepare(clock: Clock): PrepareEvent {
  return async (event, home) => {
    const prepared = await applyPrivacy(event, home, { clock: () => clock.now() });
    if (!prepared) return null;
    return { relayUrl: prepared.relayUrl, credential: prepared.credential, body: prepared.body };
  };
}

export async function readClarifyPairing(profile: ProfileScope): Promise<ClarifyPairing | null> {
  const file = await readCredentials(profile.home);
  if (!isPaired(file)) return null;
  const installationId = file.installation_id ?? '';
  const gatewayId = file.gateway_id ?? '';
  const e2e = e2eState(file);
  const keys = e2e.state === 'on' ? keysFromRecord(e2e.record) : null;
  return {
    target: { relayUrl: relayUrlOf(file), credential: file.credential },
    openAnswers(requestId, answers, batch) {
      if (e2e.state === 'off') {
        const out: Record<string, string> = {};
        for (const [qid, value] of Object.entries(answers)) {
          if (typeof value !== 'string') return null;
          out[qid] = value;
        }
        return out;
      }
      // An encrypted pairing accepts only answers sealed by the phone for this request and question.
      if (!keys) return null;
      const binding = { installationId, gatewayId, requestId };
      if (batch) return openSealedAnswers(answers, keys, binding);
      const single = openSealedAnswer(answers.q0, keys, { ...binding, questionId: '' });
      return single === null ? null : { q0: single };
    },
  };
}
