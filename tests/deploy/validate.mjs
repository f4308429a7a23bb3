// validate.mjs - Kubernetes manifests against the Kubernetes API schemas (npm kubernetes-models).
//
//   node validate.mjs FILE...
//
// Each file is YAML (JSON is YAML too), one or more documents.  Every document that is a
// Kubernetes object is checked twice: built as its kubernetes-models class (by apiVersion and
// kind) and validated (types, required fields, enums, formats), and compiled by tsc --strict as
// a literal of that class's TypeScript interface, which refuses fields the API does not have
// (the schemas' validators accept them; `kubectl apply` refuses them).  A kustomization is only
// parsed (its fields are the caller's to check).  Prints one JSON object per document:
// {"file", "kind", "name", "ok", "error", "object"} (object: the document as JSON, for the
// caller's own checks); exits 0 (the caller judges).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

const here = path.dirname(fileURLToPath(import.meta.url));
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");

function modulePath(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : [null, apiVersion];
  return `kubernetes-models/${group ? group + "/" : ""}${version}/${kind}`;
}

/** The tsc --strict errors of each object as a literal of its interface: Map(index -> messages). */
function fieldErrors(objects) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "t2s-k8s-types-"));
  try {
    fs.symlinkSync(path.join(here, "node_modules"), path.join(dir, "node_modules"));
    const lines = objects.map((o, i) => `import type { I${o.kind} as T${i} } from "${modulePath(o.apiVersion, o.kind)}";`);
    const first = lines.length;
    objects.forEach((o, i) => lines.push(`export const m${i}: T${i} = ${JSON.stringify(o)};`));
    fs.writeFileSync(path.join(dir, "manifests.ts"), lines.join("\n") + "\n");
    const tsc = path.join(here, "node_modules", "typescript", "bin", "tsc");
    const errors = new Map();
    try {
      execFileSync(process.execPath, [tsc, "--noEmit", "--strict", "--module", "nodenext", "--moduleResolution",
        "nodenext", "--target", "es2022", "--skipLibCheck", "--pretty", "false", "manifests.ts"],
        { cwd: dir, encoding: "utf8", stdio: "pipe" });
    } catch (e) {
      for (const line of String(e.stdout || "").split("\n")) {
        const m = /^manifests\.ts\((\d+),\d+\): error (.*)$/.exec(line);
        if (!m) continue;
        const i = Number(m[1]) - 1 - first;
        if (!errors.has(i)) errors.set(i, []);
        errors.get(i).push(m[2]);
      }
      if (errors.size === 0) throw new Error("tsc failed: " + String(e.stdout || e.message).slice(0, 2000));
    }
    return errors;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const results = [];
const checked = [];
for (const file of process.argv.slice(2)) {
  for (const doc of parseAllDocuments(fs.readFileSync(file, "utf8"))) {
    const where = { file, kind: null, name: null };
    if (doc.errors.length) {
      results.push({ ...where, ok: false, error: "YAML: " + doc.errors.map((e) => e.message).join("; ") });
      continue;
    }
    const obj = doc.toJS();
    if (obj === null || obj === undefined) continue;
    Object.assign(where, { kind: obj.kind ?? null, name: obj.metadata?.name ?? null, object: obj });
    if (obj.kind === "Kustomization") {
      results.push({ ...where, ok: true });
      continue;
    }
    if (typeof obj.apiVersion !== "string" || typeof obj.kind !== "string") {
      results.push({ ...where, ok: false, error: "no apiVersion or kind" });
      continue;
    }
    const r = { ...where, apiVersion: obj.apiVersion, ok: true };
    try {
      const mod = await import(modulePath(obj.apiVersion, obj.kind));
      new mod[obj.kind](obj).validate();
      checked.push({ result: r, obj });
    } catch (e) {
      Object.assign(r, { ok: false, error: String(e.message || e).slice(0, 2000) });
    }
    results.push(r);
  }
}
if (checked.length) {
  const errors = fieldErrors(checked.map((c) => c.obj));
  checked.forEach((c, i) => {
    if (errors.has(i)) Object.assign(c.result, { ok: false, error: "fields: " + errors.get(i).join("; ").slice(0, 2000) });
  });
}
results.forEach(out);
