/** Relay messenger wire shapes (WebSocket frames and event payloads); no HTTP routes of ours. */
export * from './envelope.js';
export * from './frames.js';
