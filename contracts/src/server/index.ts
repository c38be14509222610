export { WireError } from './wire-error.js';
export {
  bindRoute,
  bodyErrorCode,
  bodyReadingOf,
  declaredCodes,
  declaredStatusOf,
  fastifyPath,
  issueCode,
  type BindOptions,
  type BodyAccess,
  type BoundRequest,
  type Handler,
} from './bind-fastify.js';
