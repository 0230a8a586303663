// The work omp 13.19's session listing does for each file (spec §6.9), on a JavaScript engine, for
// the listing bench's same-run comparison (omp itself runs on Bun, which is not installed here):
// read the whole file, split on "\n", JSON.parse every line leniently, take the header, count the
// messages, collect the user and assistant text, the first user text and the last short summary,
// stat the file; all files at once, as omp does. Written for this bench, not taken from omp.
// Usage: node bench/omp_listing.mjs DIRECTORY RUNS
// Prints {"samples": [wall seconds, ...], "cpu": [CPU seconds of the process, ...]}.
import { readdirSync, statSync } from "node:fs";
import { readFile } from "node:fs/promises";

const [directory, runs] = [process.argv[2], Number(process.argv[3] ?? 3)];

function textOf(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.filter(block => block && block.type === "text").map(block => block.text).join(" ");
}

async function summarize(file) {
  const lines = (await readFile(file, "utf8")).split("\n");
  const records = [];
  for (const line of lines) {
    if (!line.trim()) continue;
    try {
      records.push(JSON.parse(line));
    } catch {}
  }
  const header = records[0];
  if (!header || header.type !== "session" || !header.id) return null;
  let count = 0, first = "", shortSummary;
  const texts = [];
  for (const record of records.slice(1)) {
    if (record.type === "compaction" && typeof record.shortSummary === "string") shortSummary = record.shortSummary;
    if (record.type !== "message" || !record.message) continue;
    count++;
    const role = record.message.role;
    if (role !== "user" && role !== "assistant") continue;
    const text = textOf(record.message.content);
    if (!text) continue;
    texts.push(text);
    if (!first && role === "user") first = text;
  }
  const modified = statSync(file).mtime;
  return { id: header.id, count, first, title: header.title ?? shortSummary, text: texts.join(" "), modified };
}

const files = readdirSync(directory).filter(name => name.endsWith(".jsonl")).map(name => `${directory}/${name}`);
const samples = [];
const cpu = [];
for (let run = 0; run < runs; run++) {
  const start = performance.now();
  const startCpu = process.cpuUsage();
  const infos = (await Promise.all(files.map(summarize))).filter(Boolean);
  infos.sort((a, b) => b.modified - a.modified);
  const used = process.cpuUsage(startCpu);
  samples.push((performance.now() - start) / 1000);
  cpu.push((used.user + used.system) / 1e6);
}
console.log(JSON.stringify({ samples, cpu }));
