import type { SessionTool, ToolChoice } from '@conduit/contracts/voice/events';
import type { Parsed } from '../signalling/ice-servers.js';

/** Bounds of client-declared session tools (CONTRACT.md §3). */
export const TOOL_LIMITS = {
  maxTools: 16,
  maxCatalogBytes: 64 * 1024,
  maxDescriptionBytes: 4 * 1024,
  maxNameChars: 64,
} as const;

/** Direct-transport tool names: identifiers without dots. */
const TOOL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const TOOL_KEYS = new Set(['type', 'name', 'description', 'parameters']);

const utf8Bytes = (text: string) => Buffer.byteLength(text, 'utf8');
const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** How `session.update` (GA clients) reads tools, unlike call setup (CONTRACT.md §3, strict). */
export interface ToolParsing {
  /** Keys beyond type, name, description and parameters (e.g. `strict`) are dropped instead of refused. */
  ignoreUnknownKeys?: boolean;
  /** Tools of another type (hosted MCP servers) are left out instead of refused: the gateway cannot run them. */
  onlyFunctions?: boolean;
}

/** Validates `session.tools`; the error text is what the client reads in the 400 body. */
export function parseSessionTools(value: unknown, parsing: ToolParsing = {}): Parsed<SessionTool[]> {
  if (value === undefined || value === null) return { ok: true, value: [] };
  if (!Array.isArray(value)) return { ok: false, error: 'tools must be an array' };
  if (value.length > TOOL_LIMITS.maxTools) return { ok: false, error: `at most ${TOOL_LIMITS.maxTools} tools` };
  if (utf8Bytes(JSON.stringify(value)) > TOOL_LIMITS.maxCatalogBytes)
    return { ok: false, error: 'tools must be at most 64 KiB of JSON' };
  const tools: SessionTool[] = [];
  const names = new Set<string>();
  for (const [index, tool] of value.entries()) {
    if (!isRecord(tool)) return { ok: false, error: `tools[${index}] must be an object` };
    const extra = Object.keys(tool).find((key) => !TOOL_KEYS.has(key));
    if (extra && !parsing.ignoreUnknownKeys)
      return { ok: false, error: `tools[${index}] has an unsupported key ${JSON.stringify(extra).slice(0, 80)}` };
    if (tool.type !== 'function' && parsing.onlyFunctions && typeof tool.type === 'string') continue;
    if (tool.type !== 'function') return { ok: false, error: `tools[${index}].type must be "function"` };
    const { name, description, parameters } = tool;
    if (typeof name !== 'string' || name.length > TOOL_LIMITS.maxNameChars || !TOOL_NAME.test(name))
      return { ok: false, error: `tools[${index}].name must be an identifier of at most 64 characters without dots` };
    if (names.has(name)) return { ok: false, error: `duplicate tool name ${name}` };
    names.add(name);
    if (description !== undefined && (typeof description !== 'string' || utf8Bytes(description) > 4096))
      return { ok: false, error: `tools[${index}].description must be a string of at most 4 KiB` };
    if (!isRecord(parameters) || parameters.type !== 'object')
      return { ok: false, error: `tools[${index}].parameters must be an object schema with type "object"` };
    tools.push({ type: 'function', name, ...(description !== undefined ? { description } : {}), parameters });
  }
  return { ok: true, value: tools };
}

/** Validates `tool_choice` against the declared tools. */
export function parseToolChoice(value: unknown, tools: readonly SessionTool[]): Parsed<ToolChoice> {
  if (value === undefined || value === null) return { ok: true, value: 'auto' };
  if (value === 'auto' || value === 'none') return { ok: true, value };
  if (value === 'required') {
    return tools.length > 0
      ? { ok: true, value }
      : { ok: false, error: 'tool_choice "required" needs at least one tool' };
  }
  if (isRecord(value)) {
    const keys = Object.keys(value).sort();
    if (keys.length === 2 && keys[0] === 'name' && keys[1] === 'type' && value.type === 'function') {
      const name = value.name;
      if (typeof name === 'string' && tools.some((tool) => tool.name === name))
        return { ok: true, value: { type: 'function', name } };
      return { ok: false, error: 'tool_choice names a tool the session does not declare' };
    }
  }
  return { ok: false, error: 'tool_choice must be "auto", "none", "required" or {"type":"function","name":...}' };
}
