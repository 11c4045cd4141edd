import { createHash } from 'node:crypto';
import { SerializerSelector, type SerializerFactory, type Serializer } from '@fastify/fast-json-stringify-compiler';

/**
 * Compiled validators and serializers shared by every server one process
 * builds, for `ServerOptions.reuseCompiledSchemas`. Only the tests set it:
 * they build a server per test, hundreds per file, and compiling the route
 * schemas (fast-json-stringify, Ajv) was ~80% of building one (measured with
 * the inspector's profiler). A production process builds one server and never
 * sets it. The same schema (and, for a serializer, the same named schemas it
 * refers to) compiles to the same pure function, so reusing it changes no
 * answer; the key is the schema's JSON, not its identity, as each server
 * builds its route options afresh.
 */
const compiled = new Map<string, unknown>();

function memo<T>(key: string, make: () => T): T {
  let fn = compiled.get(key) as T | undefined;
  if (fn === undefined) {
    fn = make();
    compiled.set(key, fn);
  }
  return fn;
}

type RouteSchema = { schema: object; httpPart?: string; httpStatus?: string; contentType?: string; method?: string; url?: string };

/** Wraps a validator compiler (one made once per process, by `make`) so each distinct schema compiles once. */
let sharedValidator: ((route: RouteSchema) => unknown) | null = null;
export function sharedValidators<F extends (route: RouteSchema) => unknown>(make: () => F): F {
  sharedValidator ??= make();
  const compile = sharedValidator;
  return ((route: RouteSchema) => memo(`v\0${route.httpPart}\0${JSON.stringify(route.schema)}`, () => compile(route))) as F;
}

/** Fastify's default serializer factory (`schemaController.compilersFactory.buildSerializer`), memoised. */
export const sharedSerializers: SerializerFactory = (externalSchemas, serializerOpts) => {
  const compile = SerializerSelector()(externalSchemas, serializerOpts);
  const context = createHash('sha256').update(JSON.stringify([externalSchemas ?? null, serializerOpts ?? null])).digest('base64');
  return (route) => {
    const { httpStatus, schema } = route;
    const contentType = (route as { contentType?: string }).contentType;
    return memo<Serializer>(`s\0${context}\0${httpStatus}\0${contentType}\0${JSON.stringify(schema)}`, () => compile(route));
  };
};
