export type ApprovalAnswerResult = 'accepted' | 'run_not_found' | 'refused' | 'unreachable';

/**
 * The Hermes API server (spec/hermes/SURFACES.md §1), for the one call the host makes on it:
 * resolving a pending approval of a run, `POST /v1/runs/{run_id}/approval {choice, request_id?}`
 * with the server's bearer key. Redirects are not followed; the key never reaches a log.
 */
export interface HermesApi {
  answerApproval(runId: string, choice: string, requestId: string | undefined): Promise<ApprovalAnswerResult>;
}

export function hermesApiClient(options: {
  url: string;
  key: string;
  timeoutMs: number;
  fetch?: typeof fetch;
}): HermesApi {
  const doFetch = options.fetch ?? fetch;
  return {
    async answerApproval(runId, choice, requestId) {
      const body: Record<string, string> = { choice };
      if (requestId) body.request_id = requestId;
      try {
        const response = await doFetch(new URL(`/v1/runs/${encodeURIComponent(runId)}/approval`, options.url), {
          method: 'POST',
          headers: {
            authorization: `Bearer ${options.key}`,
            'content-type': 'application/json',
            accept: 'application/json',
          },
          body: JSON.stringify(body),
          redirect: 'manual',
          signal: AbortSignal.timeout(options.timeoutMs),
        });
        const text = await response.text();
        if (response.ok) return 'accepted';
        if (response.status === 404) return text.includes('run_not_found') ? 'run_not_found' : 'refused';
        return 'refused';
      } catch {
        return 'unreachable';
      }
    },
  };
}
