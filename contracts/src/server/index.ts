export { WireError } from './wire-error.js';
export {
  bindRoute,
  fastifyPath,
  issueCode,
  type BoundRequest,
  type Handler,
  type BindOptions,
} from './bind-fastify.js';
