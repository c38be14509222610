import {
  ARTIFACT_FILTERS,
  ARTIFACTS_LIMIT_DEFAULT,
  ARTIFACTS_LIMIT_MAX,
  ARTIFACTS_QUERY_MAX,
  ARTIFACTS_SESSION_IDS_MAX,
  type ArtifactFilter,
} from '@conduit/contracts/dashboard/artifacts';
import { DetailError } from '../../kernel/detail-errors.js';
import type { ArtifactKind } from './artifact-kinds.js';

/** `GET /artifacts` as validated: what readPage needs, before the session ids are widened to the chat. */
export interface ArtifactQuery {
  sessionIds: string[] | null;
  kinds: readonly ArtifactKind[] | null;
  words: string[];
  limit: number;
  before: number | null;
}

/** Session ids as Hermes writes them: non-empty, no whitespace or control characters, bounded. */
const SESSION_ID = /^[^\s\p{Cc}]{1,128}$/u;
const WHOLE_NUMBER = /^[0-9]{1,15}$/;
/** Words a `q` may hold; more would only slow every row's check. */
const MAX_WORDS = 16;

function sessionIds(raw: string | string[] | undefined): string[] | null {
  if (raw === undefined) return null;
  const values = (Array.isArray(raw) ? raw : [raw]).map((value) => value.trim()).filter((value) => value !== '');
  if (values.length === 0) return null;
  if (values.length > ARTIFACTS_SESSION_IDS_MAX || !values.every((value) => SESSION_ID.test(value))) {
    throw new DetailError(400, `session_id must name a chat's session ids (at most ${ARTIFACTS_SESSION_IDS_MAX})`);
  }
  return [...new Set(values)];
}

function kinds(raw: string | undefined): readonly ArtifactKind[] | null {
  const value = raw?.trim().toLowerCase();
  if (!value) return null;
  if (!Object.hasOwn(ARTIFACT_FILTERS, value)) throw new DetailError(400, 'kind must be images, pages, files or links');
  return ARTIFACT_FILTERS[value as ArtifactFilter];
}

function words(raw: string | undefined): string[] {
  if (raw === undefined) return [];
  if (raw.length > ARTIFACTS_QUERY_MAX)
    throw new DetailError(400, `q is longer than ${ARTIFACTS_QUERY_MAX} characters`);
  return [
    ...new Set(
      raw
        .toLowerCase()
        .split(/\s+/)
        .filter((word) => word !== ''),
    ),
  ].slice(0, MAX_WORDS);
}

function limit(raw: string | undefined): number {
  if (raw === undefined || raw.trim() === '') return ARTIFACTS_LIMIT_DEFAULT;
  const value = raw.trim();
  const number = WHOLE_NUMBER.test(value) ? Number(value) : NaN;
  if (!(number >= 1 && number <= ARTIFACTS_LIMIT_MAX)) {
    throw new DetailError(400, `limit must be a whole number from 1 to ${ARTIFACTS_LIMIT_MAX}`);
  }
  return number;
}

function before(raw: string | undefined): number | null {
  if (raw === undefined || raw.trim() === '' || raw.trim() === 'null') return null;
  const value = raw.trim();
  const number = WHOLE_NUMBER.test(value) ? Number(value) : NaN;
  if (!(number >= 1)) throw new DetailError(400, "before must be the previous page's next_before");
  return number;
}

/** The query as a clean value, or a 400 naming the first field refused. */
export function artifactQuery(query: {
  session_id?: string | string[] | undefined;
  kind?: string | undefined;
  q?: string | undefined;
  limit?: string | undefined;
  before?: string | undefined;
}): ArtifactQuery {
  return {
    sessionIds: sessionIds(query.session_id),
    kinds: kinds(query.kind),
    words: words(query.q),
    limit: limit(query.limit),
    before: before(query.before),
  };
}
