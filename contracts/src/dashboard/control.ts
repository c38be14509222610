import { z } from 'zod';
import { defineProcedure, type ControlSurface } from '../control/procedures.js';

/**
 * The host service's control API (tRPC on loopback, its own token in `<state>/control-token`): what
 * `conduit …` asks the running service, so one process owns the state files. Never a credential, a
 * key or a token in an output.
 */

export const HOST_CONTROL_PREFIX = '/_conduit/control';

const count = z.number().int().nonnegative();
/** A Hermes profile name; absent: the default profile. */
const profile = z.string().min(1).max(64).optional();

export const pairingSummary = z.object({
  profile: z.string(),
  paired: z.boolean(),
  /** Set when the pairing file exists but cannot be read. */
  error: z.string().optional(),
  gatewayName: z.string().optional(),
  relayUrl: z.string().optional(),
  redactContent: z.boolean().optional(),
  endToEndEncryption: z.enum(['on', 'off', 'broken']).optional(),
});

export const deliveryStatus = z.object({
  queue: z.object({
    /** Events held (in memory and spool), in flight included. */
    depth: count,
    inFlight: count,
    /** Events that failed at least once and wait for another attempt. */
    retrying: count,
    /** Attempts made for the events held. */
    attempts: count,
    oldestAgeMs: count.nullable(),
  }),
  spool: z.object({
    /** Files in the spool folder (one per undelivered event). */
    files: count,
  }),
});

export const hostControlProcedures = {
  status: defineProcedure({
    kind: 'query',
    summary: 'The running service: version, process, profiles known, delivery queue depth',
    input: z.void(),
    output: z.object({
      version: z.string(),
      pid: z.number().int(),
      startedAtMs: z.number().int(),
      profiles: z.array(z.string()),
      queueDepth: count,
    }),
  }),
  pairings: defineProcedure({
    kind: 'query',
    summary: 'Per profile: paired?, relay URL, redaction, end-to-end encryption (never the credential)',
    input: z.void(),
    output: z.object({ pairings: z.array(pairingSummary) }),
  }),
  pushStatus: defineProcedure({
    kind: 'query',
    summary: 'The lines `conduit push status` prints for one profile (null: not paired)',
    input: z.object({ profile }),
    output: z.object({ profile: z.string(), lines: z.array(z.string()).nullable() }),
  }),
  delivery: defineProcedure({
    kind: 'query',
    summary: 'Delivery queue and spool: depth, retries, oldest age',
    input: z.void(),
    output: deliveryStatus,
  }),
  cronMutes: defineProcedure({
    kind: 'query',
    summary: 'Cron job ids whose runs send no notification, for one profile',
    input: z.object({ profile }),
    output: z.object({ profile: z.string(), muted: z.array(z.string()) }),
  }),
  setCronMute: defineProcedure({
    kind: 'mutation',
    summary: 'Mutes or unmutes one cron job of one profile',
    input: z.object({ profile, jobId: z.string().min(1).max(256), muted: z.boolean() }),
    output: z.object({ profile: z.string(), muted: z.array(z.string()) }),
  }),
  pair: defineProcedure({
    kind: 'mutation',
    summary:
      'Claims a pairing code at the relay and stores the credential, then announces this host (`conduit push pair`); never answers the credential',
    input: z.object({
      profile,
      pairingCode: z.string().min(1).max(256),
      /** The relay to claim at; absent: the public relay, as the CLI defaults. */
      relayUrl: z.string().min(1).max(2048).optional(),
      /** `--name`; absent or blank: `<hostname> Hermes`. */
      gatewayName: z.string().max(1024).optional(),
    }),
    output: z.object({
      profile: z.string(),
      gatewayName: z.string(),
      /** Why announcing this host's version failed (the pairing stands). */
      announceError: z.string().optional(),
    }),
  }),
  unpair: defineProcedure({
    kind: 'mutation',
    summary: "Revokes this host's gateway at the relay, then deletes the profile's credential (`conduit push unpair`)",
    input: z.object({ profile }),
    output: z.object({ profile: z.string(), outcome: z.enum(['revoked', 'not-paired']) }),
  }),
  setRedaction: defineProcedure({
    kind: 'mutation',
    summary: 'Turns notification content redaction on or off for one profile (`conduit push redact on|off`)',
    input: z.object({ profile, on: z.boolean() }),
    output: z.object({ profile: z.string(), paired: z.boolean() }),
  }),
  testPush: defineProcedure({
    kind: 'mutation',
    summary: 'Sends the `conduit push test` notification through the relay',
    input: z.object({ profile, corrupt: z.boolean().optional() }),
    output: z.object({
      profile: z.string(),
      outcome: z.enum(['sent', 'not-paired', 'e2e-off', 'failed']),
      message: z.string().optional(),
    }),
  }),
};

export const hostControlSurface: ControlSurface = {
  name: 'host-control',
  title: 'Conduit host control API (tRPC)',
  prefix: HOST_CONTROL_PREFIX,
  procedures: hostControlProcedures,
};
