/**
 * Who may answer a pending dangerous-command approval (issue 12). A run's approval is asked in the
 * chat of the turn that is waiting on it, and answered with `/approve`, `/approve session`,
 * `/approve always` or `/deny`. In a direct chat the one person there answers. In a group chat
 * anyone can type those words, so only the person who started the waiting turn (the requester) or
 * a configured admin (`allow_admin_from`) may answer; anyone else's answer never reaches Hermes.
 */

/** The approval a chat's running turn waits on. One per chat: turns run one at a time per chat. */
export interface PendingApproval {
  runId: string;
  requestId: string | null;
  /** Contact id of the person whose message started the waiting turn. */
  requesterId: string;
}

/** Said to a group member whose answer was not taken; it names no one and nothing of the command. */
export const APPROVAL_REFUSAL_TEXT = 'Only the person who started this request, or an admin, can answer this approval.';

/**
 * Validates an answer before anything acts on it: true when `senderId` may answer `pending`. The
 * admin list applies only to groups; a direct chat keeps answering as it always has.
 */
export function mayAnswerApproval(
  pending: PendingApproval,
  answer: { senderId: string; inGroup: boolean },
  groupAdmins: ReadonlySet<string>,
): boolean {
  if (!answer.inGroup) return true;
  return answer.senderId === pending.requesterId || groupAdmins.has(answer.senderId);
}
