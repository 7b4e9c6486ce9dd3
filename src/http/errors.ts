// The error answers the routes give, as OpenAPI documents them: one schema, and which routes give which status.
// test/http/openapi.test.ts provokes every status on every route and checks that the route documents it.
import type { RouteOptions } from 'fastify';
import { Type } from 'typebox';

/** The body of every error answer: what is wrong, in a sentence; its status, so Swagger UI's example shows it. */
export const HttpError = <S extends number>(statusCode: S, description: string) =>
  Type.Object(
    {
      statusCode: Type.Literal(statusCode),
      code: Type.Optional(Type.String()),
      error: Type.String(),
      message: Type.String(),
    },
    { description },
  );

/** `schema` as a documented answer: Swagger UI shows `description` instead of "Default Response". */
export const Answer = <T extends object>(description: string, schema: T): T => ({
  ...schema,
  'x-response-description': description,
});

/** What any route taking a JSON body may answer before its handler runs. */
export const BODY_ERRORS = {
  400: HttpError(400, 'Invalid JSON, or a field of the wrong type (the message names it)'),
  413: HttpError(413, 'The body is larger than --body-limit'),
  415: HttpError(415, 'The Content-Type is not application/json'),
};

/** What any route but the probes and /metrics may answer; the verbs give it for reasons of their own too. */
export const OVERLOADED = {
  503: HttpError(
    503,
    'Not served, retry after Retry-After: the extender is over an admission limit (maxConnections, maxBodyBytesHeld, ' +
      'maxQueuedVerbs, maxQueuedWorkSeconds; the body was not read). The scheduler verbs also answer it uncomputed before the cluster is ' +
      'listed (just started), when the request waited past verbDeadlineSeconds, or when its client has gone',
  ),
};

export const UNAUTHORIZED = {
  401: HttpError(
    401,
    'Only with --client-ca-file: the connection presented no client certificate signed by that CA (the scheduler verbs and /api/v1)',
  ),
};

/** onRoute hook: adds `responses` to a route's documented answers, keeping what the route says itself. */
export function documentResponses(responses: Record<number, unknown>, when: (route: RouteOptions) => boolean) {
  return (route: RouteOptions): void => {
    if (!route.schema || route.schema.hide || !when(route)) return;
    route.schema.response = { ...responses, ...(route.schema.response as object) };
  };
}
