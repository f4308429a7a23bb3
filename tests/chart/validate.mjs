// validate.mjs - Vega-Lite specs against the real Vega-Lite v6 JSON Schema, and compiled by Vega-Lite.
//
//   node validate.mjs < specs.json
//
// stdin: a JSON object {name: spec, ...} (the charts text2sqld answered).  Each spec is validated
// with ajv (draft-07, as the schema declares) against vega-lite/build/vega-lite-schema.json, then
// compiled to a Vega spec by vega-lite's own compile(), which fails on what the schema cannot see
// (a field it cannot read, an encoding that does not fit the mark) and logs warnings for what it
// drops.  Prints one JSON object per spec: {"name", "valid", "errors", "compiled", "compile_error",
// "warnings"}; exits 0 (the caller judges), 2 when stdin is not JSON.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Ajv from "ajv";
import * as vl from "vega-lite";

const here = path.dirname(fileURLToPath(import.meta.url));
// the package's folder, found from here (vega-lite 6 exports no ./package.json to resolve)
const schemaFile = path.join(here, "node_modules", "vega-lite", "build", "vega-lite-schema.json");
const schema = JSON.parse(fs.readFileSync(schemaFile, "utf8"));
const ajv = new Ajv({ strict: false, allErrors: true, allowUnionTypes: true, validateFormats: false });
const validate = ajv.compile(schema);

let specs;
try {
  specs = JSON.parse(fs.readFileSync(0, "utf8"));
} catch (e) {
  process.stderr.write(`stdin is not JSON: ${e.message}\n`);
  process.exit(2);
}

for (const [name, spec] of Object.entries(specs)) {
  const valid = validate(spec);
  const errors = valid ? [] : validate.errors.slice(0, 5).map((e) => `${e.instancePath} ${e.message}`);
  const warnings = [];
  const logger = {
    level() { return this; },
    warn(...m) { warnings.push(m.join(" ")); return this; },
    info() { return this; },
    debug() { return this; },
    error(...m) { warnings.push("error: " + m.join(" ")); return this; },
  };
  let compiled = false, compileError = null;
  try {
    const out = vl.compile(spec, { logger });
    compiled = !!(out && out.spec && out.spec.marks && out.spec.marks.length);
  } catch (e) {
    compileError = String(e && e.message ? e.message : e);
  }
  process.stdout.write(JSON.stringify({ name, valid, errors, compiled, compile_error: compileError, warnings }) + "\n");
}
