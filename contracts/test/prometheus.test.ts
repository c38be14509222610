import { describe, expect, it } from 'vitest';
import { isPrometheusText, parsePrometheusText, prometheusText } from '../src/prometheus.js';

const EXPOSITION = `# HELP requests_total Requests answered.
# TYPE requests_total counter
requests_total{method="GET",route="/v1/items/:id",status="200"} 3
requests_total{method="POST",route="unmatched",status="404",} 1
# HELP latency_seconds Time to answer.
# TYPE latency_seconds histogram
latency_seconds_bucket{le="0.1"} 2
latency_seconds_bucket{le="+Inf"} 3
latency_seconds_sum 0.25
latency_seconds_count 3
# TYPE lag_seconds gauge
lag_seconds Nan
# TYPE escaped gauge
escaped{text="a \\"quoted\\" \\\\ back\\nslash"} -1.5e-3 1700000000000
`;

describe('parsePrometheusText', () => {
  it('reads families, histogram series, escapes, NaN in any case and timestamps', () => {
    const families = parsePrometheusText(EXPOSITION);
    expect(families.map((f) => [f.name, f.type, f.samples.length])).toEqual([
      ['requests_total', 'counter', 2],
      ['latency_seconds', 'histogram', 4],
      ['lag_seconds', 'gauge', 1],
      ['escaped', 'gauge', 1],
    ]);
    expect(families[0]?.help).toBe('Requests answered.');
    expect(families[0]?.samples[0]).toEqual({
      name: 'requests_total',
      labels: { method: 'GET', route: '/v1/items/:id', status: '200' },
      value: 3,
    });
    expect(families[1]?.samples[1]).toMatchObject({ labels: { le: '+Inf' }, value: 3 });
    expect(families[2]?.samples[0]?.value).toBeNaN();
    expect(families[3]?.samples[0]).toMatchObject({ labels: { text: 'a "quoted" \\ back\nslash' }, value: -0.0015 });
    expect(prometheusText.safeParse(EXPOSITION).success).toBe(true);
  });

  it.each([
    ['a sample of no declared family', 'orphan 1\n'],
    ['a value that is not a number', '# TYPE x gauge\nx one\n'],
    ['an unquoted label value', '# TYPE x gauge\nx{a=b} 1\n'],
    ['a raw newline escape missing', '# TYPE x gauge\nx{a="\\q"} 1\n'],
    ['a repeated label', '# TYPE x gauge\nx{a="1",a="2"} 1\n'],
    ['a family declared twice', '# TYPE x gauge\n# TYPE x gauge\n'],
    ['an unknown type', '# TYPE x histogramm\n'],
    ['two spaces before the value', '# TYPE x gauge\nx  1\n'],
    ['a _bucket series of a gauge', '# TYPE x gauge\nx_bucket{le="1"} 1\n'],
  ])('refuses %s', (_what, text) => {
    expect(() => parsePrometheusText(text)).toThrow(/^line \d+: /);
    expect(isPrometheusText(text)).toBe(false);
  });
});
