/** Posts a hook payload to the service as the bridge does, returning what the bridge would print. */
export async function callHook(
  url: string,
  token: string,
  payload: Record<string, unknown>,
): Promise<{ status: number; answer: unknown }> {
  const response = await fetch(`${url}/_conduit/hook`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-conduit-hook-token': token },
    body: JSON.stringify(payload),
  });
  const text = await response.text();
  return { status: response.status, answer: text ? (JSON.parse(text) as unknown) : null };
}
