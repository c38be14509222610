import { initTRPC } from '@trpc/server';
import { generateOpenApiDocument, type OpenApiMeta } from 'trpc-to-openapi';
import type { z } from 'zod';

/**
 * A control-plane procedure declared once, here: whether it reads or changes state, its input and
 * output schemas, and what it does. Servers build their tRPC routers from these (the router test
 * checks each procedure uses exactly these schemas), and `npm run contracts:gen` locks the same
 * declarations as an OpenAPI snapshot.
 */
export interface ProcedureContract<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> {
  kind: 'query' | 'mutation';
  summary: string;
  input: I;
  output: O;
}

export function defineProcedure<I extends z.ZodType, O extends z.ZodType>(
  contract: ProcedureContract<I, O>,
): ProcedureContract<I, O> {
  return contract;
}

/** One tRPC control surface: its procedures and where the server mounts them. */
export interface ControlSurface {
  /** contracts/openapi/<name>.openapi.json */
  name: string;
  title: string;
  /** The Fastify prefix of the tRPC router (its procedures answer at `<prefix>/<name>`). */
  prefix: string;
  procedures: Record<string, ProcedureContract>;
}

/**
 * The surface's OpenAPI 3.1 document, from a router built of the declarations (its resolvers are never
 * called). Each procedure is one operation at `/<name>` under the tRPC prefix: a query with GET, a
 * mutation with POST; every one needs the surface's bearer token.
 */
export function buildControlOpenApi(surface: ControlSurface): Record<string, unknown> {
  const t = initTRPC.meta<OpenApiMeta>().create();
  const unreachable = (): never => {
    throw new Error('documentation router');
  };
  const procedures = Object.fromEntries(
    Object.entries(surface.procedures).map(([name, contract]) => {
      const base = t.procedure
        .meta({
          openapi: {
            method: contract.kind === 'query' ? 'GET' : 'POST',
            path: `/${name}`,
            summary: contract.summary,
            protect: true,
          },
        })
        .input(contract.input)
        .output(contract.output);
      return [name, contract.kind === 'query' ? base.query(unreachable) : base.mutation(unreachable)];
    }),
  );
  const document = generateOpenApiDocument(t.router(procedures), {
    title: surface.title,
    version: '1.0.0',
    baseUrl: surface.prefix,
  });
  return JSON.parse(JSON.stringify(document)) as Record<string, unknown>;
}
