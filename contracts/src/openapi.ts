import { z } from 'zod';
import type { AuthScheme, RouteContract, Surface } from './route.js';

type JsonSchema = Record<string, unknown>;

/** JSON Schema 2020-12 (the dialect OpenAPI 3.1 uses) for one Zod schema. */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const out = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as JsonSchema;
  delete out.$schema;
  return out;
}

const securitySchemes: Record<Exclude<AuthScheme, 'none'>, JsonSchema> = {
  device: { type: 'http', scheme: 'bearer', description: 'Device credential `<installationId>.<deviceSecret>`.' },
  gateway: {
    type: 'http',
    scheme: 'bearer',
    description: 'Gateway credential `<installationId>.<gatewayId>.<gatewaySecret>`.',
  },
  ring: { type: 'http', scheme: 'bearer', description: 'Ring token (43 base64url characters).' },
  watchKey: { type: 'http', scheme: 'bearer', description: 'Watch grant key (43 base64url characters).' },
  bearer: { type: 'http', scheme: 'bearer', description: 'Service API key.' },
  localLiveKey: {
    type: 'http',
    scheme: 'bearer',
    description: "A profile's Local Live key (`cll.<profile>.<secret>`); accepted by the Local Live model routes only.",
  },
};

function parameters(route: RouteContract): JsonSchema[] {
  const list: JsonSchema[] = [];
  const add = (where: 'path' | 'query', shape: z.ZodObject | undefined) => {
    if (!shape) return;
    const schema = jsonSchema(shape, 'input');
    const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
    const required = new Set((schema.required ?? []) as string[]);
    for (const [name, property] of Object.entries(properties)) {
      const entry: JsonSchema = { name, in: where, required: where === 'path' || required.has(name), schema: property };
      if (typeof property.description === 'string') entry.description = property.description;
      list.push(entry);
    }
  };
  add('path', route.params);
  add('query', route.query);
  return list;
}

function operation(route: RouteContract): JsonSchema {
  const op: JsonSchema = { operationId: route.operationId, summary: route.summary };
  if (route.description) op.description = route.description;
  if (route.tags) op.tags = route.tags;
  const params = parameters(route);
  if (params.length > 0) op.parameters = params;
  if (route.auth !== 'none') op.security = [{ [route.auth]: [] }];
  if (route.body) {
    op.requestBody = {
      required: true,
      content: { [route.bodyContentType ?? 'application/json']: { schema: jsonSchema(route.body, 'input') } },
    };
  }
  const responses: Record<string, JsonSchema> = {};
  for (const [status, spec] of Object.entries(route.responses)) {
    const response: JsonSchema = { description: spec.description };
    if (spec.headers) {
      response.headers = Object.fromEntries(
        Object.entries(spec.headers).map(([name, value]) => [name, { description: value, schema: { type: 'string' } }]),
      );
    }
    if (spec.schema) {
      response.content = { [spec.contentType ?? 'application/json']: { schema: jsonSchema(spec.schema, 'output') } };
    }
    responses[status] = response;
  }
  op.responses = responses;
  return op;
}

/** The OpenAPI 3.1 document of one surface. Deterministic: same contracts, same bytes. */
export function buildOpenApi(surface: Surface): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  const usedSchemes = new Set<Exclude<AuthScheme, 'none'>>();
  const routes = Object.values(surface.routes).sort((a, b) =>
    a.path === b.path ? a.method.localeCompare(b.method) : a.path.localeCompare(b.path),
  );
  for (const route of routes) {
    const item = (paths[route.path] ??= {});
    const method = route.method.toLowerCase();
    if (item[method]) throw new Error(`duplicate route ${route.method} ${route.path}`);
    item[method] = operation(route);
    if (route.auth !== 'none') usedSchemes.add(route.auth);
  }
  const doc: JsonSchema = {
    openapi: '3.1.0',
    info: { title: surface.title, version: surface.version, description: surface.description },
    paths,
  };
  if (usedSchemes.size > 0) {
    doc.components = {
      securitySchemes: Object.fromEntries([...usedSchemes].sort().map((name) => [name, securitySchemes[name]])),
    };
  }
  return doc;
}
