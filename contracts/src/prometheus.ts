import { z } from 'zod';

/**
 * The Prometheus text exposition format (version 0.0.4), which every server's `GET /metrics` answers
 * (relay/metrics.ts, dashboard/metrics.ts, voice/metrics.ts). One home for what the three share: the
 * content type, the body schema and a strict reader that tests (and the test builds' reply checks)
 * use to read an exposition line by line. No dependency on prom-client: clients of the SDK read
 * these schemas too.
 */

/** The content type prom-client's registry answers with (format 0.0.4). */
export const PROMETHEUS_TEXT_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** One sample line: `name{label="value",…} value [timestamp]`. */
export interface PrometheusSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A metric family as `# HELP` and `# TYPE` describe it, with its samples (histogram series included). */
export interface PrometheusFamily {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';
  samples: PrometheusSample[];
}

export class PrometheusTextError extends Error {}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const LABEL_NAME = '[a-zA-Z_][a-zA-Z0-9_]*';
/** A label value: any character but `"`, `\` and newline, or one of the three escapes. */
const LABEL_VALUE = '(?:[^"\\\\\\n]|\\\\[\\\\"n])*';
const LABEL = `${LABEL_NAME}="${LABEL_VALUE}"`;
/** Go's ParseFloat, which Prometheus reads values with: Inf, Infinity and NaN in any case (prom-client writes `Nan`). */
const NUMBER =
  '(?:[+-]?(?:\\d+(?:\\.\\d*)?|\\.\\d+)(?:[eE][+-]?\\d+)?|[+-]?[Ii][Nn][Ff](?:[Ii][Nn][Ii][Tt][Yy])?|[Nn][Aa][Nn])';
const SAMPLE_LINE = new RegExp(`^(${NAME})(?:\\{((?:${LABEL}(?:,${LABEL})*)?,?)\\})? (${NUMBER})(?: -?\\d+)?$`);
const HELP_LINE = new RegExp(`^# HELP (${NAME}) (.*)$`);
const TYPE_LINE = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`);
const ONE_LABEL = new RegExp(`(${LABEL_NAME})="(${LABEL_VALUE})"`, 'g');

/** The family a sample belongs to: histogram and summary series add `_bucket`, `_sum` or `_count`. */
function familyOf(sample: string, families: Map<string, PrometheusFamily>): PrometheusFamily | undefined {
  const direct = families.get(sample);
  if (direct) return direct;
  const base = sample.replace(/_(bucket|sum|count)$/, '');
  const family = families.get(base);
  return family && (family.type === 'histogram' || family.type === 'summary') ? family : undefined;
}

function unescape(value: string): string {
  return value.replace(/\\([\\"n])/g, (_match, c: string) => (c === 'n' ? '\n' : c));
}

function parseNumber(text: string): number {
  const word = text.toLowerCase();
  if (/^\+?inf(inity)?$/.test(word)) return Infinity;
  if (/^-inf(inity)?$/.test(word)) return -Infinity;
  if (word === 'nan') return NaN;
  return Number(text);
}

/**
 * Reads an exposition strictly: every line is `# HELP`, `# TYPE`, another comment, blank, or a sample
 * of a family declared by a `# TYPE` line above it; anything else, a repeated label or a family
 * declared twice throws PrometheusTextError naming the line.
 */
export function parsePrometheusText(text: string): PrometheusFamily[] {
  const families = new Map<string, PrometheusFamily>();
  const help = new Map<string, string>();
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  lines.forEach((line, index) => {
    const fail = (why: string): never => {
      throw new PrometheusTextError(`line ${index + 1}: ${why}: ${JSON.stringify(line.slice(0, 200))}`);
    };
    if (line === '') return;
    const helpLine = HELP_LINE.exec(line);
    if (helpLine) {
      help.set(helpLine[1] as string, helpLine[2] as string);
      return;
    }
    const typeLine = TYPE_LINE.exec(line);
    if (typeLine) {
      const name = typeLine[1] as string;
      if (families.has(name)) fail('family declared twice');
      families.set(name, {
        name,
        help: help.get(name) ?? '',
        type: typeLine[2] as PrometheusFamily['type'],
        samples: [],
      });
      return;
    }
    if (/^# (HELP|TYPE) /.test(line)) return fail('malformed HELP or TYPE line');
    if (line.startsWith('#')) return;
    const sample = SAMPLE_LINE.exec(line);
    if (!sample) return fail('not a sample line');
    const name = sample[1] as string;
    const family = familyOf(name, families);
    if (!family) return fail('sample of an undeclared family');
    const labels: Record<string, string> = {};
    for (const [, label, value] of (sample[2] ?? '').matchAll(ONE_LABEL)) {
      if (Object.hasOwn(labels, label as string)) fail(`label ${label} repeated`);
      labels[label as string] = unescape(value as string);
    }
    family.samples.push({ name, labels, value: parseNumber(sample[3] as string) });
  });
  return [...families.values()];
}

/** Whether a body is a well-formed exposition (the contracts' body check). */
export function isPrometheusText(text: string): boolean {
  try {
    parsePrometheusText(text);
    return true;
  } catch {
    return false;
  }
}

/** The body of a `GET /metrics` answer. */
export const prometheusText = z
  .string()
  .refine(isPrometheusText, 'not a Prometheus text exposition (format 0.0.4)')
  .describe('Prometheus text exposition format 0.0.4: `# HELP`, `# TYPE` and sample lines.');
