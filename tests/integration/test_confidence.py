#!/usr/bin/env python3
"""test_confidence.py - `confidence`, the calibrated probability that an
answer is right (pipeline/generate/confidence.h), and what the service does
with it, against the real binary, a SQLite database this test writes and the
model stub.

Covers:
  - a model's answer carries confidence in [0, 1], its band (high / medium /
    low by generate.confidence_high / _medium), and trace.confidence: source
    "scorer", every feature the weights file may name, the reasons;
  - the built-in generator's independent reading cross-checks a model's
    answer: "agrees" when its result equals the answer's, "differs" when not,
    and an answer the built-in contradicts scores lower than one it confirms;
  - several candidates, drawn adaptively: a second only when the first is not
    high, a third only when the first two disagree; their agreement is a
    feature (vote_share, vote_unanimous, result_classes); with
    generate.adaptive_sampling false every candidate asked is drawn;
  - generate.vote_by_confidence: the candidates' probabilities are their
    weights in the vote (each candidate carries its probability);
  - options.min_confidence: an answer below it is a 422 low-confidence problem
    with its SQL, confidence, band and reasons, counted in
    text2sqld_answers_abstained_total and generations_total{outcome="withheld"};
    at or above it the answer stands; a bad value is a 400 naming the field;
  - the confidence histogram in /metrics;
  - generate.confidence_file replaces the embedded weights (a constant scorer
    gives its constant); a corrupt file, an unknown feature or bands out of
    order stop the start (exit 2) naming what is wrong;
  - models.generate.logprobs asks the server for token log-probabilities: the
    trace records what came back and the scorer's logprob features see it;
    without the setting nothing is asked;
  - the built-in generator's answers (no model) are scored by their
    reading's own calibrated scorer and carry a band; below
    generate.builtin_min_confidence (default: the weights file's threshold)
    the built-in abstains: 422 builtin-refused (no Retry-After) with refusal
    low_confidence and the confidence.
Every service is stopped with SIGTERM and must exit 0.
"""

import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-confidence-")
QUIET = {"level": "warn", "access": False}

SCHEMA = """
CREATE TABLE teams (team_id INTEGER PRIMARY KEY, name TEXT, city TEXT, founded INTEGER);
CREATE TABLE players (player_id INTEGER PRIMARY KEY, name TEXT, age INTEGER,
                      team_id INTEGER REFERENCES teams(team_id));
"""
ROWS = {
    "teams": [(1, "Harbour Owls", "Lisbon", 1921), (2, "Granite Bears", "Porto", 1950),
              (3, "Valley Foxes", "Braga", 1988)],
    "players": [(1, "Ana Pires", 23, 1), (2, "Rui Costa", 31, 1), (3, "Ines Lopes", 27, 2),
                (4, "Joao Reis", 35, 3), (5, "Marta Sousa", 19, 3), (6, "Pedro Alves", 29, 2)],
}
DB_PATH = fixtures.write_sqlite(os.path.join(TMP, "league.sqlite"), SCHEMA, ROWS)
DB = "league"
QUESTION = "How many players are there?"
RIGHT = "```sql\nSELECT count(*) FROM players\n```"
WRONG = "```sql\nSELECT count(*) FROM players WHERE age > 30\n```"
FEATURES = ["fail_errors", "builtin_agrees", "builtin_differs", "vote_share", "vote_unanimous", "result_classes",
            "clause_agreement", "relations", "rows_one", "question_words", "logprob_present"]


def config(models=None, generate=None):
    cfg = {"listen": {"host": "127.0.0.1", "port": t2s.free_port()},
           "databases": [{"name": DB, "url": "sqlite://" + DB_PATH}],
           "state": {"url": "sqlite://" + os.path.join(TMP, "state-%d.sqlite" % t2s.free_port())},
           "generate": dict({"cache_ttl_s": 0}, **(generate or {})), "log": QUIET}
    if models:
        cfg["models"] = models
    return cfg


def model(stub):
    return {"generate": {"base_url": stub.base_url, "model": "gen", "timeout_ms": 5000, "retries": 0}}


def ask(svc, question=QUESTION, **options):
    body = {"database": DB, "question": question}
    if options:
        body["options"] = options
    return svc.request("POST", "/query", json=body, timeout=60)


def wait_values(svc):
    return fixtures.wait_until(lambda: (svc.request("POST", "/evidence", json={"database": DB, "question": "probe"})
                                        .json or {}).get("value_index") == "ready", timeout=120)


def band_of(c, high=0.9, medium=0.6):
    return "high" if c >= high else "medium" if c >= medium else "low"


def metric(text, name, **labels):
    """The value of the series name{labels} in a Prometheus text scrape (0 when absent)."""
    for line in text.splitlines():
        if not line.startswith(name):
            continue
        head, _, value = line.rpartition(" ")
        if all('%s="%s"' % (k, v) in head for k, v in labels.items()) and (head == name or head[len(name)] == "{"):
            return float(value)
    return 0.0


def part_scored():
    stub = fixtures.ModelStub()
    try:
        with fixtures.serving(tap, config(model(stub)), "scored_service_exits_0") as svc:
            tap.ok(wait_values(svc), "value_index_ready")
            stub.rules([], default_content=RIGHT)
            r = ask(svc)
            j = r.json or {}
            c = j.get("confidence")
            tap.ok(r.status == 200 and isinstance(c, float) and 0.0 <= c <= 1.0,
                   "a_model_answer_carries_a_confidence_within_0_and_1", diag=r.text[:400])
            tap.eq(j.get("confidence_band"), band_of(c or 0), "its_band_follows_the_default_thresholds")
            tc = (j.get("trace") or {}).get("confidence") or {}
            tap.eq(tc.get("source"), "scorer", "trace_says_the_scorer_made_it")
            feats = tc.get("features") or {}
            tap.ok(all(isinstance(feats.get(f), (int, float)) for f in FEATURES),
                   "trace_lists_the_features", diag=json.dumps(feats)[:600])
            tap.ok(isinstance(tc.get("reasons"), list), "trace_lists_the_reasons", diag=json.dumps(tc)[:300])
            tap.eq((tc.get("builtin_crosscheck"), feats.get("builtin_agrees")), ("agrees", 1.0),
                   "the_builtin_reading_agrees_with_a_right_count")
            tap.eq((feats.get("vote_share"), feats.get("candidates")), (1.0, 0.0), "one_candidate_shares_its_own_vote")
            right_conf = c

            stub.rules([], default_content=WRONG)
            r = ask(svc)
            j = r.json or {}
            tc = (j.get("trace") or {}).get("confidence") or {}
            tap.eq((r.status, tc.get("builtin_crosscheck")), (200, "differs"),
                   "the_builtin_reading_differs_from_a_wrong_count")
            tap.ok(isinstance(j.get("confidence"), float) and right_conf is not None and j["confidence"] < right_conf,
                   "an_answer_the_builtin_contradicts_scores_lower",
                   diag="%r vs %r" % (j.get("confidence"), right_conf))
            tap.ok(any(x.get("feature") == "builtin_differs" for x in tc.get("reasons") or []),
                   "the_contradiction_is_among_the_reasons", diag=json.dumps(tc.get("reasons"))[:300])

            # Adaptive sampling (options.candidates caps it): a second candidate only when the first is not
            # high, a third only when the first two disagree; the agreement features say how they split.
            def draw(sequence):
                stub.rules([{"respond": {"sequence": sequence}}], default_content=RIGHT)
                r = ask(svc, candidates=3)
                feats = (((r.json or {}).get("trace") or {}).get("confidence") or {}).get("features") or {}
                return r, feats, len(stub.requests())

            r, feats, calls = draw([WRONG, RIGHT, RIGHT])
            tap.ok(r.status == 200 and calls == 3 and (r.json or {}).get("rows") == [[6]] and feats.get("candidates") == 1.0
                   and abs(feats.get("vote_share", 0) - 2 / 3) < 1e-3 and feats.get("vote_unanimous") == 0.0
                   and abs(feats.get("result_classes", 0) - 2 / 3) < 1e-3,
                   "disagreeing_candidates_are_all_drawn_and_their_shares_scored",
                   diag="%d calls, %s" % (calls, json.dumps(feats)[:400]))
            r, feats, calls = draw([WRONG, WRONG, RIGHT])
            tap.ok(r.status == 200 and calls == 2 and feats.get("vote_unanimous") == 1.0,
                   "two_agreeing_candidates_stop_the_sampling", diag="%d calls, %s" % (calls, r.text[:300]))
            r, feats, calls = draw([RIGHT, WRONG, WRONG])
            high = (r.json or {}).get("confidence_band") == "high"
            tap.ok(r.status == 200 and calls == 1 and high and (r.json or {}).get("rows") == [[6]],
                   "a_high_first_candidate_is_the_only_one_drawn",
                   diag="%d calls, band %r" % (calls, (r.json or {}).get("confidence_band")))

            # min_confidence: above the answer's -> 422 with what was found; at or below -> the answer.
            stub.rules([], default_content=WRONG)
            before = svc.request("GET", "/metrics").text
            r = ask(svc, min_confidence=1.0)
            j = r.json or {}
            tap.ok(fixtures.is_problem(r, 422, "low-confidence"), "below_min_confidence_is_422_low_confidence",
                   diag=r.text[:400])
            tap.ok("count(*)" in (j.get("sql") or "") and isinstance(j.get("confidence"), float)
                   and j.get("confidence_band") in ("high", "medium", "low") and isinstance(j.get("reasons"), list)
                   and "rows" not in j, "the_problem_carries_sql_confidence_band_and_reasons_not_rows",
                   diag=r.text[:400])
            after = svc.request("GET", "/metrics").text
            tap.eq(metric(after, "text2sqld_answers_abstained_total", generator="model")
                   - metric(before, "text2sqld_answers_abstained_total", generator="model"), 1.0,
                   "the_abstention_is_counted")
            tap.eq(metric(after, "text2sqld_generations_total", outcome="withheld")
                   - metric(before, "text2sqld_generations_total", outcome="withheld"), 1.0,
                   "generations_total_counts_it_as_withheld")
            tap.ok(metric(after, "text2sqld_answer_confidence_count", generator="model") >= 4,
                   "the_confidence_histogram_counts_model_answers")
            r = ask(svc, min_confidence=0.0)
            tap.eq((r.status, (r.json or {}).get("rows")), (200, [[2]]), "min_confidence_0_lets_the_answer_stand")
            for bad in (1.5, -0.1, "high"):
                r = ask(svc, min_confidence=bad)
                tap.ok(fixtures.is_problem(r, 400, "invalid-request") and "options.min_confidence" in r.text,
                       "min_confidence_%s_is_400_naming_the_field" % str(bad).replace(".", "_").replace("-", "minus"),
                       diag=r.text[:300])
    finally:
        stub.close()


def part_full_vote():
    """generate.adaptive_sampling false: every candidate asked is drawn, however sure the first."""
    stub = fixtures.ModelStub()
    try:
        with fixtures.serving(tap, config(model(stub), {"adaptive_sampling": False}), "full_vote_service_exits_0") as svc:
            stub.rules([{"respond": {"sequence": [RIGHT, WRONG, WRONG]}}], default_content=RIGHT)
            r = ask(svc, candidates=3)
            tap.ok(r.status == 200 and len(stub.requests()) == 3 and (r.json or {}).get("rows") == [[2]],
                   "without_adaptive_sampling_every_candidate_is_drawn_and_voted", diag=r.text[:300])
    finally:
        stub.close()


def part_vote_by_confidence():
    """generate.vote_by_confidence: each candidate's weight is its probability; a result class weighs the sum
    of its members' probabilities (plus the built-in reading's, when it agrees); without it, no probability."""
    stub = fixtures.ModelStub()
    other = "```sql\nSELECT count(*) FROM players WHERE age < 20\n```"
    try:
        cfg = config(model(stub), {"adaptive_sampling": False, "vote_by_confidence": True})
        with fixtures.serving(tap, cfg, "vote_by_confidence_service_exits_0") as svc:
            stub.rules([{"respond": {"sequence": [WRONG, RIGHT, other, RIGHT]}}], default_content=RIGHT)
            r = ask(svc, candidates=4, max_rounds=0)
            cands = (r.json or {}).get("candidates") or []
            probs = [c.get("probability") for c in cands]
            tap.ok(r.status == 200 and len(cands) == 4 and all(isinstance(p, float) and 0 <= p <= 1 for p in probs),
                   "every_candidate_carries_its_probability", diag=r.text[:600])
            tap.ok(all(abs(c.get("weight", -1) - max(c.get("probability", -1), 0.001)) < 2e-3 for c in cands),
                   "a_candidates_weight_is_its_probability", diag=json.dumps(cands)[:600])
            # The two RIGHT candidates agree (and the built-in reading, which counts the players, agrees too):
            # their class's consensus is at least the sum of its members' probabilities.
            right = [c for c in cands if "WHERE" not in (c.get("sql") or "")]
            tap.ok(len(right) == 2 and all(c.get("consensus", 0) >= sum(x["probability"] for x in right) - 2e-3
                                           for c in right) and any(c.get("chosen") for c in right)
                   and (r.json or {}).get("rows") == [[6]],
                   "the_class_with_the_larger_sum_of_probabilities_wins", diag=json.dumps(cands)[:800])
        with fixtures.serving(tap, config(model(stub), {"adaptive_sampling": False}), "consensus_vote_service_exits_0") as svc:
            stub.rules([{"respond": {"sequence": [WRONG, RIGHT, other, RIGHT]}}], default_content=RIGHT)
            r = ask(svc, candidates=4, max_rounds=0)
            cands = (r.json or {}).get("candidates") or []
            tap.ok(r.status == 200 and len(cands) == 4 and not any("probability" in c for c in cands)
                   and (r.json or {}).get("rows") == [[6]],
                   "by_default_the_vote_weighs_validation_not_probabilities", diag=r.text[:600])
    finally:
        stub.close()


def part_logprobs():
    stub = fixtures.ModelStub()
    try:
        models = model(stub)
        models["generate"]["logprobs"] = True
        with fixtures.serving(tap, config(models), "logprobs_service_exits_0") as svc:
            stub.rules([{"respond": {"content": RIGHT, "logprob": -0.2}}])
            r = ask(svc)
            j = r.json or {}
            sent = stub.requests()
            tap.ok(bool(sent) and (sent[-1].get("body") or {}).get("logprobs") is True,
                   "logprobs_config_asks_the_server_for_them", diag=json.dumps(sent[-1] if sent else None)[:300])
            calls = (j.get("trace") or {}).get("model_calls") or []
            lp = (calls[-1] if calls else {}).get("logprobs") or {}
            tap.ok(lp.get("tokens", 0) > 0 and abs(lp.get("mean", 0) + 0.2) < 1e-9,
                   "the_trace_records_what_the_server_returned", diag=json.dumps(calls)[:400])
            feats = ((j.get("trace") or {}).get("confidence") or {}).get("features") or {}
            tap.ok(feats.get("logprob_present") == 1.0 and abs(feats.get("logprob_mean", 0) - round(math.exp(-0.2), 4))
                   < 1e-3, "the_scorer_sees_the_log_probabilities", diag=json.dumps(feats)[:400])
        with fixtures.serving(tap, config(model(stub)), "no_logprobs_service_exits_0") as svc:
            stub.rules([], default_content=RIGHT)
            ask(svc)
            sent = stub.requests()
            tap.ok(bool(sent) and "logprobs" not in (sent[-1].get("body") or {}),
                   "without_the_setting_no_logprobs_are_asked")
    finally:
        stub.close()


def part_custom_weights():
    stub = fixtures.ModelStub()
    try:
        path = os.path.join(TMP, "constant.json")
        with open(path, "w") as f:
            json.dump({"version": 1, "features": [], "weights": [], "intercept": 2.0,
                       "calibration": {"method": "none"}}, f)
        gen = {"confidence_file": path, "confidence_high": 0.95, "confidence_medium": 0.5}
        with fixtures.serving(tap, config(model(stub), gen), "custom_weights_service_exits_0") as svc:
            stub.rules([], default_content=RIGHT)
            r = ask(svc)
            j = r.json or {}
            want = 1 / (1 + math.exp(-2.0))
            tap.ok(r.status == 200 and abs((j.get("confidence") or 0) - round(want, 3)) < 1e-3,
                   "confidence_file_replaces_the_embedded_weights", diag=r.text[:300])
            tap.eq(j.get("confidence_band"), "medium", "the_configured_bands_apply")
    finally:
        stub.close()
    bad = os.path.join(TMP, "corrupt.json")
    with open(bad, "w") as f:
        f.write('{"version": 1, "features": ["fail_errors"], "weights": [')
    unknown = os.path.join(TMP, "unknown.json")
    with open(unknown, "w") as f:
        json.dump({"version": 1, "features": ["shoe_size"], "weights": [1.0], "intercept": 0,
                   "calibration": {"method": "none"}}, f)
    for name, gen, needle in (("corrupt_weights_file", {"confidence_file": bad}, "corrupt.json"),
                              ("unknown_feature", {"confidence_file": unknown}, "shoe_size"),
                              ("bands_out_of_order", {"confidence_high": 0.5, "confidence_medium": 0.7},
                               "confidence_medium")):
        code, out = t2s.run_config_only(config(None, gen), extra_args=["--check-config"], timeout=20)
        tap.ok(code == 2 and needle in out, "check_config_refuses_" + name, diag="exit %r: %s" % (code, out[-400:]))
        code, out = t2s.run_config_only(config(None, gen), timeout=20)
        tap.ok(code == 2 and needle in out, "start_refuses_" + name, diag="exit %r: %s" % (code, out[-400:]))


def part_builtin():
    with fixtures.serving(tap, config(), "builtin_service_exits_0") as svc:
        tap.ok(wait_values(svc), "builtin_value_index_ready")
        r = ask(svc)
        j = r.json or {}
        tc = (j.get("trace") or {}).get("confidence") or {}
        tap.ok(r.status == 200 and j.get("generator") == "builtin" and j.get("confidence_band") == band_of(
            j.get("confidence") or 0) and tc.get("source") == "builtin",
               "a_builtin_answer_carries_its_band", diag=r.text[:300])
        feats = tc.get("features") or {}
        tap.ok(feats.get("shape:count") == 1.0 and "hand" in feats and isinstance(tc.get("threshold"), float)
               and (j.get("confidence") or 0) >= tc["threshold"],
               "a_builtin_answer_is_scored_by_its_reading_above_the_threshold", diag=json.dumps(tc)[:400])
    # The built-in abstains below generate.builtin_min_confidence (default: the weights file's threshold).
    with fixtures.serving(tap, config(None, {"builtin_min_confidence": 1.0}), "abstaining_service_exits_0") as svc:
        tap.ok(wait_values(svc), "abstaining_value_index_ready")
        r = ask(svc)
        b = (r.json or {}).get("builtin") or {}
        tap.ok(fixtures.is_problem(r, 422, "builtin-refused") and b.get("refusal") == "low_confidence"
               and r.headers.get("Retry-After") is None
               and isinstance(b.get("confidence"), float) and "low_confidence" in (r.json or {}).get("detail", ""),
               "below_builtin_min_confidence_the_builtin_abstains", diag=r.text[:400])
    with fixtures.serving(tap, config(None, {"builtin_min_confidence": 0.0}), "never_abstaining_service_exits_0") as svc:
        tap.ok(wait_values(svc), "never_abstaining_value_index_ready")
        r = ask(svc)
        tap.eq((r.status, (r.json or {}).get("rows")), (200, [[6]]), "builtin_min_confidence_0_never_abstains")


sys.exit(fixtures.run_with_binary(tap, "confidence_needs_the_binary", part_scored, part_full_vote, part_vote_by_confidence, part_logprobs,
                                  part_custom_weights, part_builtin))
