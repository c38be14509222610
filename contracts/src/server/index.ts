export { WireError, type DeclaredWireError, type WireCode, type WireStatus } from './wire-error.js';
export {
  bindRoute,
  bodyErrorCode,
  bodyReadingOf,
  checkDeclaredReply,
  declaredCodes,
  declaredStatusOf,
  fastifyPath,
  issueCode,
  replyChecksEnabled,
  UndeclaredReplyError,
  type BindOptions,
  type BodyAccess,
  type BoundRequest,
  type Handler,
} from './bind-fastify.js';
