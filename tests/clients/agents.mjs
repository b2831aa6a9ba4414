// How to run each real coding agent non-interactively against a server of ours (ds4d, or the
// logging recorder), with no telemetry, no update checks and no network beyond that server.
//
// Each agent gets a scratch directory of its own: `home/` is its HOME (config, sessions, caches;
// the user's real ones are never read or written) and `work/` its working directory. A second
// turn in the same scratch directory continues the first session (`claude -c`, `codex exec resume
// --last`, `opencode run -c`). The environment is built from nothing but PATH and these settings,
// so variables of the calling shell (a real ANTHROPIC_API_KEY, proxies) never leak in.
// docs/agents.md shows the same settings for users.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CLIENTS_DIR = dirname(fileURLToPath(import.meta.url));
const BIN = join(CLIENTS_DIR, 'node_modules', '.bin');

export const AGENTS = ['claude-code', 'codex', 'opencode'];
const BINARIES = { 'claude-code': 'claude', codex: 'codex', opencode: 'opencode' };

// The agents whose npm package is missing (tests skip, naming the install step).
export function missingAgents() {
  return AGENTS.filter((a) => !existsSync(join(BIN, BINARIES[a])));
}

// ctest's SKIP_RETURN_CODE for the client tests.
export const SKIP = 77;

// Exits with SKIP, naming the install step, when one of `packages` (npm names) or `agents` is not
// installed in tests/clients/node_modules.
export function skipUnlessInstalled({ packages = [], agents = [] }) {
  const absent = [
    ...packages.filter((p) => !existsSync(join(CLIENTS_DIR, 'node_modules', p, 'package.json'))),
    ...agents.filter((a) => missingAgents().includes(a)),
  ];
  if (absent.length === 0) return;
  console.log(`SKIP: ${absent.join(', ')} not installed in ${CLIENTS_DIR}/node_modules; ` +
    'scripts/install-deps.sh installs them (npm ci --prefix tests/clients)');
  process.exit(SKIP);
}

function baseEnv(home) {
  return {
    PATH: process.env.PATH,
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
    TERM: 'dumb',
    LANG: 'C.UTF-8',
    NO_COLOR: '1',
  };
}

// Claude Code: the Anthropic base URL and key, and every kind of non-API traffic off.
// maxOutputTokens caps `max_tokens` (Claude Code asks for 32000 by default); maxSteps caps the
// model requests of one turn (`--max-turns`; reaching it exits 1 with "Reached max turns").
function claudeCode({ base, apiKey, model, home, maxOutputTokens, maxSteps }, prompt, resume) {
  const env = {
    ...baseEnv(home),
    ANTHROPIC_BASE_URL: base,
    ANTHROPIC_API_KEY: apiKey,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_ERROR_REPORTING: '1',
  };
  if (maxOutputTokens) env.CLAUDE_CODE_MAX_OUTPUT_TOKENS = String(maxOutputTokens);
  const args = ['-p', ...(resume ? ['-c'] : []), prompt, '--model', model,
    ...(maxSteps ? ['--max-turns', String(maxSteps)] : [])];
  return { cmd: join(BIN, 'claude'), args, env };
}

// Codex CLI: a model provider in $CODEX_HOME/config.toml speaking the Responses API.
// Codex has no setting for max_output_tokens (it sends none: the server's default applies) nor
// for the number of model requests in a turn.
function codexConfig({ base, model }) {
  return [
    `model = "${model}"`,
    'model_provider = "ds4d"',
    'check_for_update_on_startup = false',
    '',
    '[model_providers.ds4d]',
    'name = "ds4d"',
    `base_url = "${base}/v1"`,
    'wire_api = "responses"',
    'env_key = "DS4D_API_KEY"',
    '',
    '[analytics]',
    'enabled = false',
    '',
    '[feedback]',
    'enabled = false',
    '',
  ].join('\n');
}

function codex(opts, prompt, resume) {
  const codexHome = join(opts.home, '.codex');
  mkdirSync(codexHome, { recursive: true });
  writeFileSync(join(codexHome, 'config.toml'), codexConfig(opts));
  const env = { ...baseEnv(opts.home), CODEX_HOME: codexHome, DS4D_API_KEY: opts.apiKey };
  const args = ['exec', '--skip-git-repo-check', ...(resume ? ['resume', '--last'] : []), prompt];
  return { cmd: join(BIN, 'codex'), args, env };
}

// opencode: a custom provider on the OpenAI-compatible chat API (@ai-sdk/openai-compatible, which
// opencode bundles). opencode looks its plugin package up on the npm registry at start; the
// registry is pointed at a closed loopback port so that it never leaves the machine (it goes on
// without it). maxSteps caps the model requests of one turn of the build agent (opencode then
// asks for a final answer without tools).
export function opencodeConfig({ base, apiKey, model, maxOutputTokens, maxSteps }) {
  return {
    ...(maxSteps ? { agent: { build: { steps: maxSteps } } } : {}),
    $schema: 'https://opencode.ai/config.json',
    autoupdate: false,
    share: 'disabled',
    model: `ds4d/${model}`,
    provider: {
      ds4d: {
        npm: '@ai-sdk/openai-compatible',
        name: 'ds4d',
        options: { baseURL: `${base}/v1`, apiKey },
        models: {
          [model]: {
            name: 'DeepSeek V4 Flash (ds4d)',
            tool_call: true,
            reasoning: true,
            limit: { context: 65536, output: maxOutputTokens ?? 8192 },
          },
        },
      },
    },
  };
}

function opencode(opts, prompt, resume) {
  const configDir = join(opts.home, '.config', 'opencode');
  mkdirSync(configDir, { recursive: true });
  writeFileSync(join(configDir, 'opencode.json'), JSON.stringify(opencodeConfig(opts), null, 2));
  const env = {
    ...baseEnv(opts.home),
    OPENCODE_DISABLE_AUTOUPDATE: '1',
    OPENCODE_DISABLE_MODELS_FETCH: '1',
    OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
    OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
    OPENCODE_DISABLE_SHARE: '1',
    OPENCODE_DISABLE_CLAUDE_CODE: '1',
    OPENCODE_DISABLE_EXTERNAL_SKILLS: '1',
    OPENCODE_PURE: '1',
    npm_config_registry: 'http://127.0.0.1:9/',
  };
  // --title: the session's title is the prompt, not a second model request.
  const args = ['run', ...(resume ? ['-c'] : []), '--title', 'ds4d', prompt];
  return { cmd: join(BIN, 'opencode'), args, env };
}

const BUILDERS = { 'claude-code': claudeCode, codex, opencode };

// Runs one turn of `agent` and resolves {code, signal, stdout, stderr, ms}; never rejects.
// opts: {base, apiKey, model, scratch, maxOutputTokens, maxSteps, timeoutMs}; resume continues the session
// of the previous turn in the same scratch directory.
export function runAgent(agent, opts, prompt, { resume = false } = {}) {
  const home = join(opts.scratch, 'home');
  const cwd = join(opts.scratch, 'work');
  mkdirSync(home, { recursive: true });
  mkdirSync(cwd, { recursive: true });
  const { cmd, args, env } = BUILDERS[agent]({ ...opts, home }, prompt, resume);
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 300000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started });
    });
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ code: -1, signal: null, stdout, stderr: String(err), ms: Date.now() - started });
    });
  });
}
