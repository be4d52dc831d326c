import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/**
 * A STAND-IN for vLLM's OpenAI-compatible server (`vllm serve`), for the deployments suite:
 * no GPU and no model run here. What it reproduces, from vLLM's `entrypoints/openai` API and its
 * Prometheus logger (v1 engine names):
 * - the command line: `vllm serve <model> --port=N …`; an argument vLLM does not know makes it
 *   exit 2 with argparse's message, as the real one does (a crash loop under a kubelet);
 * - `GET /health` (200, empty), `GET /v1/models` (`{object: "list", data: [{id, object: "model",
 *   created, owned_by: "vllm", root, parent: null, max_model_len}]}`);
 * - `POST /v1/completions` (`{id: "cmpl-…", object: "text_completion", created, model,
 *   choices: [{index, text, logprobs: null, finish_reason, stop_reason: null}], usage}`) and
 *   `POST /v1/chat/completions` (`{id: "chatcmpl-…", object: "chat.completion", …, choices:
 *   [{index, message: {role: "assistant", content}, finish_reason}], usage}`), honouring
 *   `max_tokens`; an unknown model is 404 `{error: {message, type: "NotFoundError", param:
 *   "model", code: 404}}`;
 * - `GET /metrics` with the names the endpoint picker scrapes: `vllm:num_requests_running`,
 *   `vllm:num_requests_waiting`, `vllm:kv_cache_usage_perc`, `vllm:cache_config_info`,
 *   `vllm:lora_requests_info`, and the counters `vllm:prompt_tokens_total`,
 *   `vllm:generation_tokens_total`, `vllm:request_success_total` (labels `model_name`, `engine`).
 * Not reproduced: streaming, tokenization, sampling (the text is `pong` repeated), LoRA adapters.
 */

/** Arguments `vllm serve` accepts that the deployments render or a test passes (vLLM's own names). */
export const KNOWN_VLLM_ARGS = new Set([
  'port',
  'host',
  'tensor-parallel-size',
  'max-model-len',
  'gpu-memory-utilization',
  'max-num-seqs',
  'max-num-batched-tokens',
  'enable-prefix-caching',
  'no-enable-prefix-caching',
  'enforce-eager',
  'disable-access-log-for-endpoints',
  'kv-transfer-config',
  'data-parallel-size',
  'data-parallel-size-local',
  'data-parallel-address',
  'data-parallel-rpc-port',
  'data-parallel-start-rank',
  'enable-expert-parallel',
  'data-parallel-multi-port-external-lb',
  'enable-lora',
  'max-lora-rank',
  'max-loras',
  'served-model-name',
  'dtype',
  'trust-remote-code',
  'block-size',
]);

/** The model and port of a `vllm serve` command line, or argparse's complaint (exit 2). */
export function parseServe(args: string[]): { ok: true; model: string; port: number; maxModelLen: number } | { ok: false; log: string } {
  const [model, ...rest] = args;
  if (!model || model.startsWith('--')) return { ok: false, log: 'usage: vllm serve [model_tag] [options]\nvllm serve: error: the following arguments are required: model_tag\n' };
  const unknown = rest.filter((a) => !KNOWN_VLLM_ARGS.has(a.replace(/^--/, '').split('=')[0]));
  if (unknown.length) return { ok: false, log: `usage: vllm serve [model_tag] [options]\nvllm serve: error: unrecognized arguments: ${unknown.join(' ')}\n` };
  const value = (name: string) => rest.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
  return { ok: true, model, port: Number(value('port') ?? 8000), maxModelLen: Number(value('max-model-len') ?? 4096) };
}

interface Counters {
  running: number;
  success: number;
  prompt: number;
  generation: number;
}

/** One vLLM stand-in listening on `host:port`, serving `model`. */
export class VllmStandIn {
  private server?: Server;
  private readonly created = Math.floor(Date.now() / 1000);
  readonly counters: Counters = { running: 0, success: 0, prompt: 0, generation: 0 };
  /** Requests served, `METHOD path`. */
  readonly requests: string[] = [];

  constructor(
    readonly host: string,
    readonly port: number,
    readonly model: string,
    readonly maxModelLen = 4096,
  ) {}

  async listen(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(this.port, this.host, () => resolve());
    });
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }

  private json(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  }

  private async body(req: IncomingMessage): Promise<Record<string, unknown> | null> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of req) {
      size += (c as Buffer).length;
      if (size > 1024 * 1024) return null;
      chunks.push(c as Buffer);
    }
    try {
      const v = JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null') as unknown;
      return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
    } catch {
      return null;
    }
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    this.requests.push(`${req.method} ${path}`);
    if (req.method === 'GET' && path === '/health') return void res.writeHead(200).end();
    if (req.method === 'GET' && path === '/v1/models') {
      return this.json(res, 200, { object: 'list', data: [{ id: this.model, object: 'model', created: this.created, owned_by: 'vllm', root: this.model, parent: null, max_model_len: this.maxModelLen }] });
    }
    if (req.method === 'GET' && path === '/metrics') {
      const l = `model_name="${this.model}",engine="0"`;
      const c = this.counters;
      const text = [
        '# HELP vllm:num_requests_running Number of requests in model execution batches.',
        '# TYPE vllm:num_requests_running gauge',
        `vllm:num_requests_running{${l}} ${c.running}`,
        '# HELP vllm:num_requests_waiting Number of requests waiting to be processed.',
        '# TYPE vllm:num_requests_waiting gauge',
        `vllm:num_requests_waiting{${l}} 0`,
        '# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.',
        '# TYPE vllm:kv_cache_usage_perc gauge',
        `vllm:kv_cache_usage_perc{${l}} 0.0`,
        '# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig',
        '# TYPE vllm:cache_config_info gauge',
        `vllm:cache_config_info{block_size="16",engine="0",num_gpu_blocks="8192"} 1.0`,
        '# HELP vllm:lora_requests_info Running stats on lora requests.',
        '# TYPE vllm:lora_requests_info gauge',
        `vllm:lora_requests_info{max_lora="0",running_lora_adapters="",waiting_lora_adapters=""} ${this.created}.0`,
        '# HELP vllm:prompt_tokens_total Number of prefill tokens processed.',
        '# TYPE vllm:prompt_tokens_total counter',
        `vllm:prompt_tokens_total{${l}} ${c.prompt}.0`,
        '# HELP vllm:generation_tokens_total Number of generation tokens processed.',
        '# TYPE vllm:generation_tokens_total counter',
        `vllm:generation_tokens_total{${l}} ${c.generation}.0`,
        '# HELP vllm:request_success_total Count of successfully processed requests.',
        '# TYPE vllm:request_success_total counter',
        `vllm:request_success_total{finished_reason="length",${l}} ${c.success}.0`,
        '',
      ].join('\n');
      return void res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(text);
    }
    const chat = path === '/v1/chat/completions';
    if (req.method === 'POST' && (path === '/v1/completions' || chat)) {
      const b = await this.body(req);
      if (!b) return this.json(res, 400, { error: { message: 'the request body is not a JSON object', type: 'BadRequestError', param: null, code: 400 } });
      if (b.model !== this.model) {
        return this.json(res, 404, { error: { message: `The model \`${String(b.model)}\` does not exist.`, type: 'NotFoundError', param: 'model', code: 404 } });
      }
      const max = typeof b.max_tokens === 'number' && b.max_tokens > 0 ? Math.min(Math.floor(b.max_tokens), 64) : 16;
      const text = ' pong'.repeat(max).trim();
      const promptTokens = chat ? 8 : String(b.prompt ?? '').split(/\s+/).filter(Boolean).length + 1;
      this.counters.success++;
      this.counters.prompt += promptTokens;
      this.counters.generation += max;
      const usage = { prompt_tokens: promptTokens, completion_tokens: max, total_tokens: promptTokens + max };
      const created = Math.floor(Date.now() / 1000);
      if (chat) {
        return this.json(res, 200, {
          id: `chatcmpl-${this.counters.success}`,
          object: 'chat.completion',
          created,
          model: this.model,
          choices: [{ index: 0, message: { role: 'assistant', content: text }, logprobs: null, finish_reason: 'length', stop_reason: null }],
          usage,
        });
      }
      return this.json(res, 200, { id: `cmpl-${this.counters.success}`, object: 'text_completion', created, model: this.model, choices: [{ index: 0, text: ` ${text}`, logprobs: null, finish_reason: 'length', stop_reason: null }], usage });
    }
    this.json(res, 404, { detail: 'Not Found' });
  }
}

/** A STAND-IN for llm-d's routing sidecar on a P/D decode pod: HTTP on `port` passed to the pod's vLLM on `to`. */
export function routingSidecar(host: string, port: number, to: number): Promise<Server> {
  const server = createServer((req, res) => {
    const up = request({ host, port: to, method: req.method, path: req.url, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('error', () => res.writeHead(502).end());
    req.pipe(up);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}
