import { readFileSync } from 'node:fs';
import { z } from 'zod';

/**
 * The language-neutral detection fixtures (shared/spec/voice/fixtures/derived_fixtures.json), copied into the
 * repository so the tests do not depend on a sibling checkout; `fixtures.test.ts` checks the copy still holds
 * the same data as the shared file whenever that file is present.
 */
export const FIXTURE_PATH = new URL('./fixtures/derived_fixtures.json', import.meta.url);
export const SHARED_FIXTURE_PATH = new URL(
  '../../../../shared/spec/voice/fixtures/derived_fixtures.json',
  import.meta.url,
);

const expectedEvent = z.object({
  event: z.enum(['calibrated', 'speech_started', 'speech_stopped', 'dispatch', 'input_audio_too_long']),
  at_us: z.number().int(),
  noise_rms: z.number().optional(),
  bytes: z.number().int().optional(),
  rle: z.array(z.tuple([z.number(), z.number().int()])).optional(),
});

const endpointCase = z.object({
  name: z.string(),
  transport: z.enum(['direct', 'conference']),
  silence_duration_us: z.number().int(),
  pre_calibrated_noise: z.number().nullable(),
  max_capture_bytes: z.number().int().optional(),
  input: z.object({
    segments: z.array(z.object({ level: z.number().int(), frames: z.number().int() })),
    packet_frames: z.number().int().positive(),
  }),
  expected_events: z.array(expectedEvent),
  final_noise_rms: z.number(),
});

const fixtureFile = z.object({
  vad_endpoint_cases: z.array(endpointCase),
  gate_cases: z.object({
    thresholds: z.array(z.object({ noise_rms: z.number(), start: z.number(), stop: z.number() })),
    calibration: z.array(z.object({ rms_values: z.array(z.number()), noise_rms: z.number() })),
    sequences: z.array(
      z.object({
        start_noise_rms: z.number(),
        steps: z.array(z.tuple([z.number(), z.boolean(), z.number()])),
        expected_speech: z.array(z.boolean()),
        final_noise_rms: z.number(),
        tolerance: z.number(),
      }),
    ),
  }),
  trim_cases: z.array(
    z.object({
      name: z.string(),
      input_frames: z.number().int(),
      output_frames: z.number().int(),
      trimmed_frames: z.number().int(),
      output_equals_input_from_index: z.number().int(),
    }),
  ),
});

export type EndpointCase = z.infer<typeof endpointCase>;
export type ExpectedEvent = z.infer<typeof expectedEvent>;
export const fixtures = fixtureFile.parse(JSON.parse(readFileSync(FIXTURE_PATH, 'utf8')));
