"""replaylib.py - a run of the service against a model stub, for the scripts
that replay real systems' answers (replay_eval.py, fit_confidence.py).

- serve_questions(): start text2sqld over the run's databases with the stub
  as its generate and debug model (model name = the run's systems, answer
  cache off), POST each item through the caller's function, stop it.
"""
import concurrent.futures
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib  # noqa: E402
import servicelib  # noqa: E402


def serve_questions(ctx, model, n_candidates, one, port=0, ready_timeout=600.0, api_key=None, timeout=300.0,
                    concurrency=2):
    """Start a text2sqld whose generate/debug model is the stub at ctx["stub"]
    (a /v1 base URL) named `model`, over ctx["databases"] (directories under
    ctx["dbdir"]), with ctx["binary"]; call one(client, item) for every item
    of ctx["items"] on `concurrency` threads; returns (results in item order,
    seconds, the stub's /_stub/stats without its log)."""
    procs = servicelib.Procs()
    try:
        dbroot = procs.path("databases")
        os.mkdir(dbroot)
        for db_id in ctx["databases"]:
            os.symlink(os.path.join(ctx["dbdir"], db_id), os.path.join(dbroot, db_id))
        endpoint = {"base_url": ctx["stub"], "model": model}
        models = {"generate": dict(endpoint), "debug": dict(endpoint)}
        generate = {"cache_ttl_s": 0, "max_candidates": max(8, n_candidates)}
        generate.update(ctx.get("generate_options") or {})
        extra = servicelib.bench_extra(procs, models, generate)
        cfg = procs.write_config(port or servicelib.free_port(), dbroot, extra)
        url, _ = procs.start_service(ctx["binary"], cfg, ready_timeout)
        client = benchlib.LinkClient(url, api_key, timeout)
        stub = benchlib.LinkClient(ctx["stub"][:-len("/v1")], None, 30.0)
        stub.request("POST", "/_stub/reset", {})
        t0 = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, concurrency)) as ex:
            results = list(ex.map(lambda item: one(client, item), ctx["items"]))
        seconds = round(time.perf_counter() - t0, 1)
        _, stats, _, _ = stub.request("GET", "/_stub/stats")
    finally:
        procs.stop_all()
    return results, seconds, {k: v for k, v in (stats or {}).items() if k != "log"}
