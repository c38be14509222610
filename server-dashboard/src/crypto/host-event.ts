import type { E2eClarifyRouting, E2eEnvelope } from '@conduit/contracts/crypto/e2e';

/**
 * The plaintext notification event the host builds (EVENTS.md §2) before privacy is applied. The relay's
 * POST /v1/events body accepts exactly these fields; the privacy step turns it into what actually leaves.
 */
export interface ApprovalDecision {
  kind: 'approval';
  session_key: string;
  description: string;
  choices: string[];
  /** Parks the approval on the relay so the phone can answer it there (our relay's extension). */
  request_id?: string;
}

export interface ClarifyQuestion {
  qid?: string;
  question: string;
  choices?: string[];
  multi_select?: true;
}

export interface ClarifyDecision {
  kind: 'clarify';
  request_id: string;
  question: string;
  choices?: string[];
  questions?: ClarifyQuestion[];
}

export interface CallRequest {
  id: string;
  kind: string;
  session_ids: string[];
  title?: string;
  reason?: string;
}

export interface HostEvent {
  event_id: string;
  type: string;
  plugin_version?: string;
  plugin_capabilities?: string[];
  session_id?: string;
  profile?: string;
  gateway?: string;
  stored_session_id?: string;
  title?: string;
  body?: string;
  decision?: ApprovalDecision | ClarifyDecision;
  call?: CallRequest;
}

/** An event whose content is sealed for the phone; the relay sees routing data only. */
export interface SealedEvent {
  event_id: string;
  type: string;
  plugin_version?: string;
  plugin_capabilities?: string[];
  e2e: E2eEnvelope;
  clarify?: E2eClarifyRouting;
}

/** What goes out when an encrypted pairing cannot seal an event: no content at all, never plaintext. */
export interface ContentFreeEvent {
  event_id: string;
  type: string;
  plugin_version?: string;
  plugin_capabilities?: string[];
}

export type OutgoingEvent = HostEvent | SealedEvent | ContentFreeEvent;

/** The event's version fields, which always travel in the clear (the relay records the plugin version). */
export function versionFields(event: HostEvent): Pick<HostEvent, 'plugin_version' | 'plugin_capabilities'> {
  const out: Pick<HostEvent, 'plugin_version' | 'plugin_capabilities'> = {};
  if (event.plugin_version !== undefined) out.plugin_version = event.plugin_version;
  if (event.plugin_capabilities !== undefined) out.plugin_capabilities = event.plugin_capabilities;
  return out;
}
