// Records the request bodies omp's pi-ai builds for every case in cases.json.
//
// pi-ai's own `stream()` is pointed at a fake HTTP endpoint on 127.0.0.1; the endpoint keeps the raw
// body of each request and answers 400, so no model is called and nothing leaves the machine.
// Usage (see README.md): HOME=$(mktemp -d) PI_AI_DEPS=/path/to/deps bun record.ts
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const deps = process.env.PI_AI_DEPS;
if (!deps) throw new Error("set PI_AI_DEPS to the folder where @oh-my-pi/pi-ai@18.2.3 is installed");
const ai = await import(join(deps, "node_modules/@oh-my-pi/pi-ai/src/index.ts"));
const catalog = await import(join(deps, "node_modules/@oh-my-pi/pi-catalog/src/models.ts"));

// One target model per request format; `format` names the golden file.
// A second model per API exercises "same provider, other model" replays.
const TARGETS = [
	{ label: "anthropic", format: "anthropic", provider: "anthropic", id: "claude-sonnet-4-5" },
	{ label: "anthropic@claude-opus-4-1", format: "anthropic", provider: "anthropic", id: "claude-opus-4-1" },
	{ label: "openai-responses", format: "openai-responses", provider: "openai", id: "gpt-5" },
	{ label: "openai-responses@gpt-5-mini", format: "openai-responses", provider: "openai", id: "gpt-5-mini" },
	{ label: "openai-chat", format: "openai-chat", provider: "groq", id: "llama-3.3-70b-versatile" },
	{ label: "google", format: "google", provider: "google", id: "gemini-2.5-pro" },
	{ label: "google@gemini-2.5-flash", format: "google", provider: "google", id: "gemini-2.5-flash" },
];

const here = import.meta.dir;
const cases = JSON.parse(readFileSync(join(here, "cases.json"), "utf8"));
let captured: string[] = [];
const server = Bun.serve({
	hostname: "127.0.0.1",
	port: 0,
	async fetch(request) {
		captured.push(await request.text());
		return new Response(JSON.stringify({ error: { type: "invalid_request_error", message: "recorded" } }), {
			status: 400,
			headers: { "content-type": "application/json" },
		});
	},
});

const out: Record<string, Record<string, string>> = {};
const targets: Record<string, unknown> = {};
for (const target of TARGETS) {
	const model = { ...catalog.getBundledModel(target.provider, target.id), baseUrl: `http://127.0.0.1:${server.port}` };
	targets[target.label] = {
		format: target.format,
		provider: model.provider,
		api: model.api,
		id: model.id,
		maxTokens: model.maxTokens,
		reasoning: model.reasoning,
		images: model.input.includes("image"),
	};
	const bodies: Record<string, string> = {};
	for (const testCase of cases) {
		const context = {
			systemPrompt: testCase.systemPrompt,
			messages: testCase.messages,
			...(testCase.tools ? { tools: testCase.tools } : {}),
		};
		captured = [];
		for await (const _event of ai.stream(model, context, { apiKey: "test-key", maxRetries: 0 })) {
			// drain: the stream ends with the endpoint's 400
		}
		if (captured.length !== 1) throw new Error(`${target.format}/${testCase.name}: ${captured.length} requests`);
		bodies[testCase.name] = captured[0];
	}
	out[target.label] = bodies;
	console.log(`${target.label}: ${Object.keys(bodies).length} bodies`);
}
server.stop(true);
mkdirSync(join(here, "golden"), { recursive: true });
writeFileSync(join(here, "golden", "targets.json"), `${JSON.stringify(targets, null, 1)}\n`);
for (const [format, bodies] of Object.entries(out)) {
	writeFileSync(join(here, "golden", `${format}.json`), `${JSON.stringify(bodies, null, 1)}\n`);
}
