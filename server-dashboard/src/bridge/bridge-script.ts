/** The plain JavaScript hook bridge shipped with this workspace. */
export function bridgeScriptPath(): URL {
  return new URL('../../bin/conduit-hook.mjs', import.meta.url);
}
