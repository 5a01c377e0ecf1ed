// Lints Cypher statements with Neo4j's own parser and semantic analysis
// (@neo4j-cypher/language-support, pinned in package.json).
//
// stdin:  JSON [{"query": "...", "params": ["name", ...], "version": "CYPHER 5"?}, ...]
// stdout: JSON [{"index": i, "version": "...", "diagnostics": [{"severity", "message",
//          "line", "column", "offset"}]}, ...]  (one entry per statement and Cypher version)
// Each query is checked as CYPHER 5 and CYPHER 25 unless "version" names one. Only the
// declared parameters exist, and function names are checked against Neo4j's built-in
// function list shipped with the package, so a typo or an undeclared $param is reported.
// Exit status: 0 when every statement is clean, 1 when any diagnostic was reported,
// 2 on bad input.
import { lintCypherQuery, testData } from '@neo4j-cypher/language-support';

const SEVERITY = { 1: 'error', 2: 'warning', 3: 'information', 4: 'hint' };
const VERSIONS = ['CYPHER 5', 'CYPHER 25'];

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

function builtinFunctions() {
  // Keep only Neo4j's built-ins (the mock schema also lists APOC/GDS plugins).
  const out = {};
  for (const [version, registry] of Object.entries(testData.mockSchema.functions)) {
    out[version] = Object.fromEntries(
      Object.entries(registry).filter(([, fn]) => fn.isBuiltIn !== false &&
        !fn.name.startsWith('apoc.') && !fn.name.startsWith('gds.')),
    );
  }
  return out;
}

let input;
try {
  input = JSON.parse(await readStdin());
  if (!Array.isArray(input)) throw new Error('expected a JSON array');
} catch (err) {
  process.stderr.write(`cypher-lint: bad input: ${err.message}\n`);
  process.exit(2);
}

const functions = builtinFunctions();
const results = [];
let dirty = false;
input.forEach((item, index) => {
  const parameters = Object.fromEntries((item.params ?? []).map((p) => [p, null]));
  for (const version of item.version ? [item.version] : VERSIONS) {
    const { diagnostics } = lintCypherQuery(item.query, {
      parameters, functions, defaultLanguage: version,
    });
    const found = diagnostics.map((d) => ({
      severity: SEVERITY[d.severity] ?? String(d.severity),
      message: d.message,
      line: d.range.start.line + 1,
      column: d.range.start.character + 1,
      offset: d.offsets?.start ?? null,
    }));
    if (found.length) dirty = true;
    results.push({ index, version, diagnostics: found });
  }
});
process.stdout.write(JSON.stringify(results) + '\n');
process.exit(dirty ? 1 : 0);
