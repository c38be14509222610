export { WireError } from './wire-error.js';
export {
  bindRoute,
  bodyReadingOf,
  fastifyPath,
  issueCode,
  type BindOptions,
  type BodyAccess,
  type BoundRequest,
  type Handler,
} from './bind-fastify.js';
