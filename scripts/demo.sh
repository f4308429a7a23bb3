#!/bin/sh
# README's first command: install what is needed, build, and serve a small
# demo SQLite database on the embedded defaults (SQLite, no Redis, no model
# servers), then show a few requests: /query answered by the built-in generator (no model
# needed) and one question it refuses.  The service keeps running until
# Ctrl-C; with --no-wait it stops after the requests.
# TEXT2SQLD_LISTEN_PORT picks another port (default 8080).
# With TEXT2SQLD_DEMO_MODEL_URL naming an OpenAI-compatible server's /v1 base
# URL (vLLM, llama.cpp's server, Ollama, TGI) and TEXT2SQLD_DEMO_MODEL its
# model name (TEXT2SQLD_DEMO_MODEL_KEY_ENV: the variable holding its API key,
# if it needs one), the demo routes generation to it and asks /query.
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)
wait_after=1
[ "${1:-}" = "--no-wait" ] && wait_after=0
port=${TEXT2SQLD_LISTEN_PORT:-8080}

./scripts/install-deps.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
meson compile -C build >/dev/null

mkdir -p demo
python3 scripts/make-demo-db.py demo/shop.sqlite
models=""
if [ -n "${TEXT2SQLD_DEMO_MODEL_URL:-}" ]; then
	key=""
	[ -n "${TEXT2SQLD_DEMO_MODEL_KEY_ENV:-}" ] && key=", \"api_key_env\": \"$TEXT2SQLD_DEMO_MODEL_KEY_ENV\""
	models=",
  \"models\": {\"generate\": {\"base_url\": \"$TEXT2SQLD_DEMO_MODEL_URL\", \"model\": \"${TEXT2SQLD_DEMO_MODEL:-default}\",
                \"timeout_ms\": 120000$key}}"
fi
cat >demo/text2sqld.json <<JSON
{
  "listen": {"host": "127.0.0.1", "port": $port},
  "databases": [{"name": "shop", "url": "sqlite://shop.sqlite"}],
  "limits": {"drain_timeout_ms": 125000},
  "generate": {"max_timeout_ms": 120000}$models
}
JSON

build/text2sqld --config demo/text2sqld.json 2>demo/text2sqld.log &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null' EXIT INT TERM
i=0
until curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; do
	i=$((i + 1))
	if [ $i -gt 100 ] || ! kill -0 $pid 2>/dev/null; then
		echo "text2sqld did not start; its log:" >&2
		cat demo/text2sqld.log >&2
		exit 1
	fi
	sleep 0.1
done

base="http://127.0.0.1:$port"
show() { # show TITLE CURL-ARGS...
	title=$1
	shift
	printf '\n$ curl %s\n' "$*" | sed "s|$base||"
	curl -s "$@" | python3 -c 'import json,sys; t=sys.stdin.read(); print(json.dumps(json.loads(t), indent=1)[:1500])' || true
	: "$title"
}
echo "text2sqld is serving $root/demo/shop.sqlite at $base"
show "databases" "$base/databases"
printf '\n$ curl /databases/shop   (summarised: tables, columns, keys)\n'
curl -s "$base/databases/shop" | python3 -c '
import json, sys
for t in json.load(sys.stdin)["tables"]:
    cols = ", ".join(c["name"] + (" PK" if c["primary_key"] else "") for c in t["columns"])
    fks = "; ".join("%s -> %s(%s)" % (",".join(f["columns"]), f["references"]["table"], ",".join(f["references"]["columns"])) for f in t["foreign_keys"])
    print(" %-12s %3s rows  %s%s" % (t["name"], t["row_count"], cols, ("  FK " + fks) if fks else ""))'

show "query" -X POST -H 'Content-Type: application/json' "$base/execute" \
	-d '{"database": "shop", "sql": "SELECT c.country, count(*) AS orders FROM orders o JOIN customers c USING (customer_id) GROUP BY c.country ORDER BY orders DESC", "max_rows": 5}'
printf '\n$ curl -X POST /link -d {"database": "shop", "question": "Which customers ordered a burr grinder?"}   (summarised)\n'
curl -s -X POST -H 'Content-Type: application/json' "$base/link" \
	-d '{"database": "shop", "question": "Which customers ordered a burr grinder?"}' | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(" tables: ", ", ".join(t["name"] for t in r["tables"]))
print(" columns:", ", ".join(c["table"] + "." + c["column"] for c in r["columns"]))
for j in r["joins"]:
    print(" join:    %s.%s = %s.%s (%s)" % (j["left"]["table"], j["left"]["column"], j["right"]["table"], j["right"]["column"], j["kind"]))
print(" took %.2f ms on the server" % r["timings_ms"]["total"])'
printf '\n$ curl -X POST /evidence -d {"database": "shop", "question": "Which customers in france ordered a burr grinder?"}   (summarised)\n'
for _ in 1 2 3 4 5 6 7 8 9 10; do # the value index builds in the background after start
	curl -s -X POST -H 'Content-Type: application/json' "$base/evidence" \
		-d '{"database": "shop", "question": "Which customers in france ordered a burr grinder?"}' >demo/evidence.json
	grep -q '"value_index":"ready"' demo/evidence.json && break
	sleep 0.2
done
python3 -c '
import json
r = json.load(open("demo/evidence.json"))
for v in r["values"]:
    print(" value:   %s.%s = %r (matched %r; probe: %s)" % (v["table"], v["column"], v["value"], v["matched"], v["probe"]["sql"]))
for e in r["evidence"]:
    print(" evidence (%s): %s" % (e["kind"], e["text"]))'
question="Which customers in France ordered a burr grinder, and when?"
# ask QUESTION: POST /query and print the SQL, who wrote it, its validation and rows (or the problem)
ask() {
	printf '\n$ curl -X POST /query -d {"database": "shop", "question": "%s"}   (summarised)\n' "$1"
	curl -s -X POST -H 'Content-Type: application/json' "$base/query" \
		-d "{\"database\": \"shop\", \"question\": \"$1\"}" | python3 -c '
import json, sys
r = json.load(sys.stdin)
if "sql" not in r or "rows" not in r:
    print(" %s %s: %s" % (r.get("status"), r.get("title"), r.get("detail")))
    sys.exit(0)
print(" sql:        " + r["sql"].replace("\n", "\n             "))
print(" written by: the %s (confidence %.2f)" % ("built-in generator, no model" if r.get("generator") == "builtin" else "model", r.get("confidence", 0)))
bad = [c for c in r["validation"] if not c["ok"]]
print(" validation: %d checks, %s" % (len(r["validation"]), "all passed" if not bad else "; ".join("%s: %s" % (c["check"], c["detail"]) for c in bad)))
for c in r["corrections"]:
    print(" correction round %d (%s): %s" % (c["round"], c["check"], c["error"][:120]))
print(" columns:    " + ", ".join(r["columns"]))
for row in r["rows"][:10]:
    print("             " + " | ".join(str(v) for v in row))
print(" %d rows; %d model calls; %.0f ms in all" % (r["row_count"], len(r["trace"]["model_calls"]), r["trace"]["timings_ms"]["total"]))'
}
if [ -n "$models" ]; then
	ask "$question"
else
	printf '\nNo model server is configured: the built-in generator answers the questions it can read with confidence.\n'
	ask "How many customers are from France?"
	ask "What is the name of the product with the highest unit price?"
	ask "How many orders are there for each status?"
	ask "$question"
	printf '\nThe built-in generator refuses what it cannot read word for word (above: why); a model server answers it:\n'
	printf '  TEXT2SQLD_DEMO_MODEL_URL=http://127.0.0.1:11434/v1 TEXT2SQLD_DEMO_MODEL=qwen2.5-coder:7b ./scripts/demo.sh   (Ollama; vLLM: :8000/v1, llama.cpp: :8080/v1 with TEXT2SQLD_LISTEN_PORT=8090)\n'
fi
show "refused write" -X POST -H 'Content-Type: application/json' "$base/execute" \
	-d '{"database": "shop", "sql": "DELETE FROM orders"}'
show "readiness" "$base/readyz"
printf '\n$ curl /metrics | head\n'
curl -s "$base/metrics" | grep -v '^#' | head -5
if [ $wait_after = 1 ]; then
	printf '\ntext2sqld keeps serving at %s (log: demo/text2sqld.log); Ctrl-C stops it.\n' "$base"
	wait $pid
fi
