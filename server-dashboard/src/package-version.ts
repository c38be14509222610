import { readFileSync } from 'node:fs';

const packageJson = new URL('../package.json', import.meta.url);

/** The version in this workspace's package.json as it is on disk now, or null when unreadable. */
export function readPackageVersion(): string | null {
  try {
    const parsed: unknown = JSON.parse(readFileSync(packageJson, 'utf8'));
    if (parsed && typeof parsed === 'object' && 'version' in parsed && typeof parsed.version === 'string') {
      return parsed.version;
    }
    return null;
  } catch {
    return null;
  }
}
