import { isDeepStrictEqual } from 'node:util';
import type { FastifyInstance, FastifyReply } from 'fastify';

/** One answer whose JSON differs from what its handler returned: a field the schema drops or reshapes. */
export interface AnswerDrift {
  /** `METHOD /url` as registered. */
  route: string;
  status: number;
  /** What the handler returned (through `JSON.stringify`). */
  returned: unknown;
  /** What the client received (the schema's serializer, fast-json-stringify). */
  answered: unknown;
}

export interface AnswerCheck {
  /** Answers that differ from what their handler returned. */
  readonly drifts: AnswerDrift[];
  /** Every route that answered a checked JSON object, with its status (`METHOD /url status`). */
  readonly checked: Set<string>;
  /** Installs the check on an app; call it before any route is added (`HttpAppOptions.instrument`). */
  install(app: FastifyInstance): void;
}

type Hook = (...args: never[]) => unknown;
const hooks = (h: Hook | Hook[] | undefined): Hook[] => (h === undefined ? [] : Array.isArray(h) ? h : [h]);

/**
 * Compares, for every route of an app, what fastify answers with what the handler returned.
 * fastify serializes an answer with its response schema (fast-json-stringify), which drops
 * every property the schema does not list and coerces the others to the listed type: a schema
 * narrower than the service's answer silently breaks the contract. The check parses the sent
 * JSON and the handler's value (as `JSON.stringify` renders it), and records a drift when they
 * differ. Text and error answers are not compared (the handler returned no object).
 */
export function answerCheck(): AnswerCheck {
  const returned = new WeakMap<FastifyReply, string>();
  const drifts: AnswerDrift[] = [];
  const checked = new Set<string>();
  return {
    drifts,
    checked,
    install(app) {
      app.addHook('onRoute', (r) => {
        const route = `${Array.isArray(r.method) ? r.method.join(',') : r.method} ${r.url}`;
        const before = async (_req: unknown, reply: FastifyReply, payload: unknown) => {
          returned.set(reply, JSON.stringify(payload));
          return payload;
        };
        const after = async (_req: unknown, reply: FastifyReply, payload: unknown) => {
          const value = returned.get(reply);
          if (value !== undefined && typeof payload === 'string') {
            returned.delete(reply);
            const status = reply.statusCode;
            checked.add(`${route} ${status}`);
            const want = JSON.parse(value) as unknown;
            const got = JSON.parse(payload) as unknown;
            if (!isDeepStrictEqual(want, got)) drifts.push({ route, status, returned: want, answered: got });
          }
          return payload;
        };
        r.preSerialization = [...hooks(r.preSerialization as Hook | Hook[] | undefined), before] as never;
        r.onSend = [...hooks(r.onSend as Hook | Hook[] | undefined), after] as never;
      });
    },
  };
}
