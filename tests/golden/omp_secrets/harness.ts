// Records omp 18.3.4's own secret obfuscation of the cases in cases.json (see README.md).
//
// Runs omp's unmodified src/secrets/index.ts (loadSecrets, collectEnvSecrets, the built-in patterns,
// buildSecretObfuscator, SecretObfuscator) from the 18.3.4 tarball. Its two package imports are
// provided here: `@oh-my-pi/pi-utils` (a logger, isEnoent, the key path: none of them affects the
// output) and `@oh-my-pi/pi-ai/providers/transform-messages`, whose SENSITIVE_TOKEN_RE is taken
// verbatim from the same release's dist/cli.js bundle.
//
//   bun tests/golden/omp_secrets/harness.ts <omp 18.3.4 package dir> > tests/golden/omp_secrets/expected.json
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { plugin } from "bun";

const packageDir = process.argv[2] ?? "/work/upstream/18.3.4/package";
const bundle = fs.readFileSync(path.join(packageDir, "dist/cli.js"), "utf8");
const start = bundle.indexOf("/(?<![a-zA-Z0-9_*-])(gh[opusr]_");
const end = bundle.indexOf("/gi;", start);
if (start < 0 || end < 0) throw new Error("SENSITIVE_TOKEN_RE not found in dist/cli.js");
const sensitiveSource = bundle.slice(start + 1, end);
const SENSITIVE_TOKEN_RE = new RegExp(sensitiveSource, "gi");

plugin({
	name: "omp-secrets-deps",
	setup(build) {
		build.module("@oh-my-pi/pi-utils", () => ({
			loader: "object",
			exports: {
				getSecretPlaceholderKeyPath: () => {
					throw new Error("the harness always passes keyDir");
				},
				isRecord: (value: unknown) => value !== null && typeof value === "object" && !Array.isArray(value),
				isEnoent: (err: unknown) => (err as { code?: string } | null)?.code === "ENOENT",
				logger: {
					warn: (message: string) => warnings.push(message),
					time: (_label: string, fn: (...args: unknown[]) => unknown, ...args: unknown[]) => fn(...args),
				},
			},
		}));
		build.module("@oh-my-pi/pi-ai/providers/transform-messages", () => ({
			loader: "object",
			exports: { SENSITIVE_TOKEN_RE },
		}));
	},
});

const warnings: string[] = [];
const secrets = await import(path.join(packageDir, "src/secrets/index.ts"));

interface Case {
	name: string;
	env: Record<string, string>;
	global_yml: string | null;
	project_yml: string | null;
	key: string;
	texts: string[];
}

const cases: Case[] = JSON.parse(fs.readFileSync(path.join(import.meta.dir, "cases.json"), "utf8"));
const results: { name: string; outputs: string[]; warnings: string[] }[] = [];
const savedEnv = { ...process.env };
for (const c of cases) {
	const root = fs.mkdtempSync(path.join(os.tmpdir(), "omp-secrets-golden-"));
	const agentDir = path.join(root, "agent");
	const cwd = path.join(root, "project");
	fs.mkdirSync(path.join(cwd, ".omp"), { recursive: true });
	fs.mkdirSync(agentDir, { recursive: true });
	if (c.global_yml !== null) fs.writeFileSync(path.join(agentDir, "secrets.yml"), c.global_yml);
	if (c.project_yml !== null) fs.writeFileSync(path.join(cwd, ".omp", "secrets.yml"), c.project_yml);
	fs.writeFileSync(path.join(agentDir, "secret-placeholder.key"), c.key);
	for (const name of Object.keys(process.env)) delete process.env[name];
	Object.assign(process.env, c.env);
	warnings.length = 0;
	const obfuscator = await secrets.buildSecretObfuscator(cwd, agentDir, agentDir);
	for (const name of Object.keys(process.env)) delete process.env[name];
	Object.assign(process.env, savedEnv);
	const outputs = c.texts.map((text: string) => obfuscator.obfuscate(text));
	results.push({ name: c.name, outputs, warnings: warnings.map(w => w.replace(/^secrets\.yml\[\d+\]: /, "")) });
	fs.rmSync(root, { recursive: true, force: true });
}
process.stdout.write(`${JSON.stringify({ omp: "18.3.4", sensitive_token_re: sensitiveSource, results }, null, 1)}\n`);
