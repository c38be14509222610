/** Errors that stop the connector for good (no reconnect), named by the adapter's fatal codes. */
export type FatalCode =
  | 'relay_unauthorized'
  | 'relay_webhook_configured'
  | 'relay_state_account_mismatch'
  | 'relay_full_sync_failed'
  | 'relay_websocket_terminal'
  | 'relay_websocket_stopped'
  | 'relay_protocol_error'
  | `relay_websocket_${string}`;

export class MessengerFatalError extends Error {
  override name = 'MessengerFatalError';
  constructor(
    readonly code: FatalCode,
    message: string,
  ) {
    super(message);
  }
}

/** A frame broke the protocol: the connection is closed and never retried. */
export class RelayProtocolError extends Error {
  override name = 'RelayProtocolError';
}

export class RelayFullSyncError extends Error {
  override name = 'RelayFullSyncError';
}

export const WEBHOOK_CONFIGURED_MESSAGE =
  'Relay refused the WebSocket because this Agent has a saved webhook subscription. The agent must have no saved webhook subscriptions: delete its webhook subscription, then start the connector again.';
