import { configSection, type ProfileFiles } from '../profile-files.js';

/**
 * The web search backends Hermes knows (`web.backend` in config.yaml, set by `hermes tools`), and
 * what makes each usable. This host runs the three the seed names — SearXNG, Firecrawl, Tavily — with
 * their own HTTP APIs; the others are Python SDKs or packages inside Hermes.
 */
export const HERMES_WEB_BACKENDS = [
  'exa',
  'parallel',
  'firecrawl',
  'tavily',
  'searxng',
  'brave-free',
  'ddgs',
  'xai',
] as const;
export type HermesWebBackend = (typeof HERMES_WEB_BACKENDS)[number];

export const RUNNABLE_BACKENDS = ['searxng', 'tavily', 'firecrawl'] as const;
export type RunnableBackend = (typeof RUNNABLE_BACKENDS)[number];

export function isRunnable(backend: HermesWebBackend): backend is RunnableBackend {
  return (RUNNABLE_BACKENDS as readonly string[]).includes(backend);
}

function asBackend(value: unknown): HermesWebBackend | undefined {
  const name = typeof value === 'string' ? value.trim().toLowerCase() : '';
  return HERMES_WEB_BACKENDS.find((known) => known === name);
}

/** Hermes' `_is_backend_available`: the backend's key or URL is set (ddgs is a Python package: never here). */
export function backendConfigured(backend: HermesWebBackend, files: ProfileFiles): boolean {
  switch (backend) {
    case 'exa':
      return files.env('EXA_API_KEY') !== undefined;
    case 'parallel':
      return files.env('PARALLEL_API_KEY') !== undefined;
    case 'firecrawl':
      return files.env('FIRECRAWL_API_KEY') !== undefined || files.env('FIRECRAWL_API_URL') !== undefined;
    case 'tavily':
      return files.env('TAVILY_API_KEY') !== undefined;
    case 'searxng':
      return files.env('SEARXNG_URL') !== undefined;
    case 'brave-free':
      return files.env('BRAVE_SEARCH_API_KEY') !== undefined;
    case 'xai':
      return files.env('XAI_API_KEY') !== undefined;
    case 'ddgs':
      return false;
  }
}

/** Hermes' auto-detection order for a home without `web.backend`: paid backends before free ones. */
const DETECTION_ORDER: readonly HermesWebBackend[] = [
  'firecrawl',
  'parallel',
  'tavily',
  'exa',
  'searxng',
  'brave-free',
];

export interface WebSearchChoice {
  /** Whether any backend is usable (Hermes' `check_web_api_key`). */
  configured: boolean;
  /** The backend a search goes to (Hermes' `_get_search_backend`). */
  backend: HermesWebBackend;
  /** Whether config.yaml names it (a search then fails with its own configuration message). */
  named: boolean;
}

/**
 * Picks the search backend as Hermes does: `web.search_backend` when it is usable, else `web.backend`
 * when it names a backend (even an unusable one: the search then fails with its configuration
 * message), else the first usable backend in detection order, else Firecrawl.
 */
export function chooseSearchBackend(files: ProfileFiles): WebSearchChoice {
  const web = configSection(files.config, 'web');
  const specific = asBackend(web.search_backend);
  const shared = asBackend(web.backend);
  const configured =
    [specific, shared].some((backend) => backend !== undefined && backendConfigured(backend, files)) ||
    HERMES_WEB_BACKENDS.some((backend) => backendConfigured(backend, files));
  if (specific && backendConfigured(specific, files)) return { configured, backend: specific, named: true };
  if (shared) return { configured, backend: shared, named: true };
  const detected = DETECTION_ORDER.find((backend) => backendConfigured(backend, files));
  return { configured, backend: detected ?? 'firecrawl', named: false };
}
