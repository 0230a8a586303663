// Records regression cases from the real omp 18.2.3 (issue 24, item 6): runs each op script of
// cases/<name>.json through omp's SessionManager (the package at $OMP_PKG, after `bun install`)
// and prints the raw result in the raw protocol of tests/conformance_omp18 (README there); the
// normaliser (tests/conformance_omp18/normalize.py) turns it into cases/<name>.expected.json.
// See README.md for how to re-record. This file is ours; nothing of omp's code is copied.
import * as fs from "node:fs";
import * as path from "node:path";

const pkg = process.env.OMP_PKG;
if (!pkg) throw new Error("set OMP_PKG to the unpacked @oh-my-pi/pi-coding-agent@18.2.3 package");
const { SessionManager } = await import(`${pkg}/src/session/session-manager.ts`);
const { loadSessionFile } = await import(`${pkg}/src/session/session-loader.ts`);

const [scriptPath, dir] = process.argv.slice(2);
const script = JSON.parse(fs.readFileSync(scriptPath, "utf8"));
const ops: any[] = Array.isArray(script) ? script : script.ops;
const home = process.env.HOME!;
process.chdir(dir);

const NO_MANAGER = "no current SessionManager: start with create/open/continueRecent/inMemory/forkFrom";
const err = (e: unknown) => ({ __error__: e instanceof Error ? e.message : String(e), __error_name__: "Error" });

function substitute(value: any, returns: any[]): any {
	if (typeof value === "string") {
		if (/^\$\d+$/.test(value)) return returns[Number(value.slice(1))];
		return value.replaceAll("$DIR", dir).replaceAll("$HOME", home);
	}
	if (Array.isArray(value)) return value.map(v => substitute(v, returns));
	if (value && typeof value === "object") {
		return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, returns)]));
	}
	return value;
}

function linesRaw(file: string): string[] {
	const parts = fs.readFileSync(file, "utf8").split("\n");
	if (parts.length > 0 && parts[parts.length - 1] === "") parts.pop();
	return parts;
}

function readFile(file: string | undefined): any[] | null {
	if (!file || !fs.existsSync(file)) return null;
	return linesRaw(file).map(line => {
		try {
			return JSON.parse(line);
		} catch {
			return { __unparseable_line__: line };
		}
	});
}

function sessionFiles(): { path: string; file_lines_raw: string[] }[] {
	const found: string[] = [];
	const scan = (d: string, depth: number) => {
		if (!fs.existsSync(d)) return;
		for (const e of fs.readdirSync(d, { withFileTypes: true })) {
			const p = path.join(d, e.name);
			if (e.isFile() && e.name.endsWith(".jsonl")) found.push(p);
			else if (e.isDirectory() && depth > 0) scan(p, depth - 1);
		}
	};
	scan(dir, 1);
	const sessions = path.join(home, ".omp", "agent", "sessions");
	if (fs.existsSync(sessions)) for (const d of fs.readdirSync(sessions)) scan(path.join(sessions, d), 0);
	return found.sort().map(p => ({ path: p, file_lines_raw: linesRaw(p) }));
}

const returns: any[] = [];
let current: any;
for (const raw of ops) {
	const a = substitute(raw, returns);
	let result: any = null;
	try {
		switch (a.op) {
			case "create":
				current = SessionManager.create(a.cwd, a.dir);
				result = current.getSessionFile() ?? null;
				break;
			case "open":
				current = await SessionManager.open(a.file, a.dir);
				result = current.getSessionFile() ?? null;
				break;
			case "inMemory":
				current = SessionManager.inMemory(a.cwd);
				break;
			case "writeFile":
				fs.mkdirSync(path.dirname(a.file), { recursive: true });
				fs.writeFileSync(a.file, a.content);
				result = a.file;
				break;
			case "readFile":
				result = readFile(a.file ?? current?.getSessionFile());
				break;
			case "list":
				result = (await SessionManager.list(a.cwd, a.dir)).map((i: any) => ({
					...i,
					created: i.created.toISOString(),
					modified: i.modified.toISOString(),
				}));
				break;
			case "loadSessionFile": {
				const loaded = await loadSessionFile(a.file, undefined, { throwIfMissing: a.throwIfMissing });
				result = loaded;
				break;
			}
			default: {
				if (!current) {
					result = { __error__: NO_MANAGER, __error_name__: "Error" };
					break;
				}
				switch (a.op) {
					case "appendMessage":
						result = current.appendMessage(a.message);
						break;
					case "appendLabelChange":
						result = current.appendLabelChange(a.targetId, a.label);
						break;
					case "appendMessageToBranch":
						result = current.appendMessageToBranch(a.message, a.parentId);
						break;
					case "branch":
						result = current.branch(a.entryId) ?? null;
						break;
					case "branchWithSummary":
						result = current.branchWithSummary(a.entryId, a.summary);
						break;
					case "createBranchedSession":
						result = (await current.createBranchedSession(a.leafId)) ?? null;
						break;
					case "fork": {
						const forked = await current.fork();
						result = forked ? { oldSessionFile: forked.oldSessionFile, newSessionFile: forked.newSessionFile } : null;
						break;
					}
					case "setSessionName":
						result = await current.setSessionName(a.name, a.source ?? "auto", a.trigger);
						break;
					case "persistCopy":
						current = await current.persistCopy({ sessionDir: a.sessionDir });
						result = current.getSessionFile() ?? null;
						break;
					case "isSessionOnDisk":
						result = current.isSessionOnDisk();
						break;
					case "getHeader":
						result = current.getHeader();
						break;
					case "getBranch":
						result = current.getBranch(a.fromId).map((e: any) => e.id);
						break;
					case "getLeafId":
						result = current.getLeafId();
						break;
					case "buildSessionContext":
						result = current.buildSessionContext(a.options);
						break;
					case "rewriteEntries":
						await current.rewriteEntries();
						break;
					case "moveTo":
						await current.moveTo(a.cwd, a.dir);
						result = current.getSessionFile() ?? null;
						break;
					case "ensureOnDisk":
						await current.ensureOnDisk();
						break;
					case "flush":
						await current.flush();
						break;
					default:
						result = { __error__: `no method ${a.op}`, __error_name__: "Error" };
				}
			}
		}
	} catch (e) {
		result = err(e);
	}
	returns.push(result === undefined ? null : result);
}
if (current) await current.flush?.();
const file = current?.getSessionFile() ?? null;
const out = {
	dir,
	home,
	returns,
	file,
	file_exists: current ? (file ? fs.existsSync(file) : false) : null,
	files: sessionFiles(),
	header: current?.getHeader() ?? null,
	sessionId: current?.getSessionId() ?? null,
	sessionName: current?.getSessionName() ?? null,
	entries: current?.getEntries() ?? null,
	leafId: current?.getLeafId() ?? null,
	context: current?.buildSessionContext() ?? null,
	manager_state: current
		? {
				sessionName: current.getSessionName() ?? null,
				titleSource: current.titleSource ?? null,
				titleRevision: current.titleRevision,
				additionalDirectories: current.getAdditionalDirectories(),
				recordedCwd: current.getRecordedCwd() ?? null,
				isSessionOnDisk: current.isSessionOnDisk(),
			}
		: null,
};
process.stdout.write(JSON.stringify(out));
process.exit(0);
