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

/**
 * Fastify's schemaErrorFormatter: its own sentence (`body/Pod/spec must be object`), with what the rule allows where
 * ajv leaves it out: an enum's values, the property an object does not take.
 */
export function schemaErrorMessage(
  errors: readonly { instancePath?: string; message?: string; keyword: string; params: Record<string, unknown> }[],
  dataVar: string,
): Error {
  const detail = (e: (typeof errors)[number]) => {
    if (e.keyword === 'enum' && Array.isArray(e.params.allowedValues))
      return `: ${e.params.allowedValues.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ')}`;
    if (e.keyword === 'additionalProperties' && typeof e.params.additionalProperty === 'string')
      return `: ${e.params.additionalProperty}`;
    return '';
  };
  return new Error(errors.map((e) => `${dataVar}${e.instancePath ?? ''} ${e.message}${detail(e)}`).join(', '));
}

/** The 413's message: the limit, and the flag (and setting) that raises it. */
export function bodyTooLargeMessage(limit: number): string {
  const units: [string, number][] = [
    ['Gi', 2 ** 30],
    ['Mi', 2 ** 20],
    ['Ki', 2 ** 10],
  ];
  const unit = units.find(([, size]) => limit % size === 0);
  const quantity = unit ? `, ${limit / unit[1]}${unit[0]}` : '';
  return `the request body is larger than --body-limit (${limit} bytes${quantity}): raise --body-limit (setting bodyLimit) to accept it`;
}
