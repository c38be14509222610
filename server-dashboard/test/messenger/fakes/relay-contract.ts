/**
 * The locked Relay contract, loaded for the fake server: the vendored OpenAPI YAML parsed with
 * `yaml`, and Ajv (JSON Schema 2020-12, the dialect of OpenAPI 3.1) validators for request bodies,
 * parameters and responses, resolved by JSON pointer into the document itself.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

const here = path.dirname(fileURLToPath(import.meta.url));
export const CONTRACT_PATH = path.resolve(
  here,
  '../../../../contracts/openapi/relay-messenger/b1e534c03fb9d2826ac63ea0d6cc7a0b843276e9/openapi.yaml',
);

type Json = Record<string, unknown>;

export interface OperationSpec {
  method: string;
  template: string;
  operationId: string;
  pattern: RegExp;
  paramNames: string[];
  parameters: { name: string; in: string; required: boolean; validate: ValidateFunction }[];
  body: ValidateFunction | null;
  bodyRequired: boolean;
  responses: Map<string, ValidateFunction | null>;
}

function escapePointer(s: string): string {
  return s.replace(/~/g, '~0').replace(/\//g, '~1');
}

function pointerUri(parts: string[]): string {
  return `relay#/${parts.map((p) => encodeURIComponent(escapePointer(p))).join('/')}`;
}

export interface RelayContract {
  operations: OperationSpec[];
  /** Validator of a named component schema (e.g. "WebSocketReadyFrame"). */
  schema(name: string): ValidateFunction;
  match(method: string, pathname: string): { op: OperationSpec; params: Record<string, string> } | null;
}

let cached: RelayContract | null = null;

export function loadRelayContract(): RelayContract {
  if (cached !== null) return cached;
  const doc = parseYaml(fs.readFileSync(CONTRACT_PATH, 'utf8')) as Json;
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  const addFormats = addFormatsModule as unknown as (a: Ajv2020) => void;
  addFormats(ajv);
  ajv.addSchema({ $id: 'relay', components: doc['components'], paths: doc['paths'] });
  // Compiled on first use: the whole document takes seconds to compile and a test needs a few routes.
  const compileRef = (parts: string[]): ValidateFunction => {
    let compiled: ValidateFunction | undefined;
    const lazy = ((data: unknown) => {
      compiled ??= ajv.compile({ $ref: pointerUri(parts) });
      const ok = compiled(data);
      lazy.errors = compiled.errors;
      return ok;
    }) as ValidateFunction;
    return lazy;
  };
  const operations: OperationSpec[] = [];
  const paths = doc['paths'] as Record<string, Json>;
  const components = doc['components'] as Json;
  for (const [template, item] of Object.entries(paths)) {
    const shared = (item['parameters'] as Json[] | undefined) ?? [];
    for (const method of ['get', 'post', 'put', 'patch', 'delete']) {
      const op = item[method] as Json | undefined;
      if (op === undefined) continue;
      const paramNames: string[] = [];
      const pattern = new RegExp(
        `^${template
          .replace(/[.*+?^${}()|[\]\\]/g, (c) => (c === '{' || c === '}' ? c : `\\${c}`))
          .replace(/\{([^}]+)\}/g, (_m, name: string) => {
            paramNames.push(name);
            return '([^/]+)';
          })}$`,
      );
      const params = [...shared, ...((op['parameters'] as Json[] | undefined) ?? [])];
      const parameters = params.map((p, i) => {
        const resolved = typeof p['$ref'] === 'string' ? resolveRef(components, p['$ref']) : p;
        const inShared = i < shared.length;
        const ptr = inShared
          ? ['paths', template, 'parameters', String(i), 'schema']
          : ['paths', template, method, 'parameters', String(i - shared.length), 'schema'];
        return {
          name: String(resolved['name']),
          in: String(resolved['in']),
          required: resolved['required'] === true,
          validate: typeof p['$ref'] === 'string' ? ajv.compile(resolved['schema'] as object) : compileRef(ptr),
        };
      });
      const rb = op['requestBody'] as Json | undefined;
      const body =
        rb?.['content'] && (rb['content'] as Json)['application/json']
          ? compileRef(['paths', template, method, 'requestBody', 'content', 'application/json', 'schema'])
          : null;
      const responses = new Map<string, ValidateFunction | null>();
      for (const [status, r] of Object.entries((op['responses'] as Json) ?? {})) {
        const resp = r as Json;
        if (typeof resp['$ref'] === 'string') {
          const name = resp['$ref'].split('/').pop() ?? '';
          const content = ((components['responses'] as Json)[name] as Json)['content'] as Json | undefined;
          responses.set(
            status,
            content?.['application/json']
              ? compileRef(['components', 'responses', name, 'content', 'application/json', 'schema'])
              : null,
          );
        } else {
          const content = resp['content'] as Json | undefined;
          responses.set(
            status,
            content?.['application/json']
              ? compileRef(['paths', template, method, 'responses', status, 'content', 'application/json', 'schema'])
              : null,
          );
        }
      }
      operations.push({
        method: method.toUpperCase(),
        template,
        operationId: String(op['operationId']),
        pattern,
        paramNames,
        parameters,
        body,
        bodyRequired: rb?.['required'] === true,
        responses,
      });
    }
  }
  const schemaCache = new Map<string, ValidateFunction>();
  cached = {
    operations,
    schema(name) {
      let v = schemaCache.get(name);
      if (v === undefined) {
        v = compileRef(['components', 'schemas', name]);
        schemaCache.set(name, v);
      }
      return v;
    },
    match(method, pathname) {
      for (const op of operations) {
        if (op.method !== method) continue;
        const m = op.pattern.exec(pathname);
        if (m === null) continue;
        const params: Record<string, string> = {};
        op.paramNames.forEach((n, i) => (params[n] = decodeURIComponent(m[i + 1] ?? '')));
        return { op, params };
      }
      return null;
    },
  };
  return cached;
}

function resolveRef(components: Json, ref: string): Json {
  const parts = ref.replace(/^#\/components\//, '').split('/');
  let cur: unknown = components;
  for (const p of parts) cur = (cur as Json)[p];
  return cur as Json;
}
