// The peer of `python -m bench.peer`: omp 18.2.3's own SessionManager on Bun, one case per
// process (installed by `make bench-peer` into bench/peer/, from the npm registry).
// Usage: bun bench/omp_peer.ts CASE PATH
//   open-context  SessionManager.open(PATH) + buildSessionContext()
//   tree          SessionManager.open(PATH), then getTree() (only getTree timed)
//   list          SessionManager.list(cwd, PATH) (PATH: one project's session directory)
// Prints {"seconds": wall, "cpu": CPU seconds of the timed part, "rss": peak RSS bytes, "count": n}.
import { SessionManager } from "@oh-my-pi/pi-coding-agent/session/session-manager";

const [kind, path] = [process.argv[2], process.argv[3]];
const options = { suppressBreadcrumb: true, throwIfMissing: true };

async function main(): Promise<void> {
	let count = 0;
	let start = performance.now();
	let cpu = process.cpuUsage();
	if (kind === "open-context") {
		const manager = await SessionManager.open(path, undefined, undefined, options);
		count = manager.buildSessionContext().messages.length;
	} else if (kind === "tree") {
		const manager = await SessionManager.open(path, undefined, undefined, options);
		start = performance.now();
		cpu = process.cpuUsage();
		count = manager.getTree().length;
	} else if (kind === "list") {
		count = (await SessionManager.list(process.cwd(), path)).length;
	} else {
		throw new Error(`unknown case ${kind}`);
	}
	const seconds = (performance.now() - start) / 1000;
	const used = process.cpuUsage(cpu);
	const rss = process.resourceUsage().maxRSS * 1024;
	process.stdout.write(`${JSON.stringify({ seconds, cpu: (used.user + used.system) / 1e6, rss, count })}\n`);
}

await main();
