// validate.mjs - Kubernetes manifests against the Kubernetes API schemas (npm kubernetes-models).
//
//   node validate.mjs FILE...
//
// Each file is YAML (JSON is YAML too), one or more documents.  Every document that is a
// Kubernetes object is built as its kubernetes-models class (by apiVersion and kind) and
// validated; a kustomization is only parsed (its fields are the caller's to check).  Prints one
// JSON object per document: {"file", "kind", "name", "ok", "error", "object"} (object: the
// document as JSON, for the caller's own checks); exits 0 (the caller judges).
import fs from "node:fs";
import { parseAllDocuments } from "yaml";

const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");

async function modelClass(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : [null, apiVersion];
  const mod = await import(`kubernetes-models/${group ? group + "/" : ""}${version}/${kind}`);
  return mod[kind] ?? mod.default;
}

for (const file of process.argv.slice(2)) {
  const docs = parseAllDocuments(fs.readFileSync(file, "utf8"));
  for (const doc of docs) {
    const where = { file, kind: null, name: null };
    if (doc.errors.length) {
      out({ ...where, ok: false, error: "YAML: " + doc.errors.map((e) => e.message).join("; ") });
      continue;
    }
    const obj = doc.toJS();
    if (obj === null || obj === undefined) continue;
    where.kind = obj.kind ?? null;
    where.name = obj.metadata?.name ?? null;
    where.object = obj;
    if (obj.kind === "Kustomization") {
      out({ ...where, ok: true });
      continue;
    }
    if (typeof obj.apiVersion !== "string" || typeof obj.kind !== "string") {
      out({ ...where, ok: false, error: "no apiVersion or kind" });
      continue;
    }
    try {
      const Model = await modelClass(obj.apiVersion, obj.kind);
      new Model(obj).validate();
      out({ ...where, apiVersion: obj.apiVersion, ok: true });
    } catch (e) {
      out({ ...where, ok: false, error: String(e.message || e).slice(0, 2000) });
    }
  }
}
