#!/usr/bin/env python3
"""test_jwt.py - bearer JWTs (auth.jwt, server/auth_jwt.h) on the real text2sqld binary.

Keys are made here (python3-cryptography: RSA 2048 and EC P-256) and published as a JWKS file;
tokens are signed with them for real (python3-jwt), or tampered with by hand.  Accepted: RS256 and
ES256 tokens of the configured issuer and audience (aud a string or an array holding it), exp just
past but within leeway_s.  Refused with a 401 problem saying why: "none", HS256 signed with the RSA
public key as the HMAC secret, an alg the service does not take (RS512), an unknown kid, a key from
another set, a changed payload, a changed signature, an expired token, nbf in the future, another
issuer, another audience, no sub, no exp, a malformed claim.  The claims map like a key's config:
databases (another database answers 404 like a missing one), scopes (a query token gets 403 on an
admin route, an admin token is served), tables (only the granted table is seen and read; a tables
claim that is not an object refuses the token).  The subject names
the caller in the log lines of its requests, in the audit log and in
text2sqld_caller_requests_total{caller="jwt:<sub>"}.  /readyz and /metrics show a JWT caller what
they show an API key (its databases' checks and series, its own caller series).  API keys keep
working beside JWTs.  SIGHUP
reloads the JWKS file: after a key rotation the old key's tokens are refused and the new key's
accepted; a JWKS file that does not load is refused at start (naming auth.jwt.jwks_file) and on
reload keeps the keys in force.
"""

import base64
import hashlib
import hmac
import json
import os
import secrets
import signal
import sys
import time

try:
    import jwt
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
except ImportError:
    # Debian's python3-jwt and python3-cryptography live in /usr/bin/python3's path.
    if os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    jwt = None

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-jwt-")
ISSUER = "https://idp.example.test/realms/shop"
AUDIENCE = "text2sqld"
API_KEY = "t2s-jwt-apikey-%s" % secrets.token_hex(16)
JWKS = os.path.join(TMP, "jwks.json")
AUDIT = os.path.join(TMP, "audit.log")


def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64u_json(obj):
    return b64u(json.dumps(obj, separators=(",", ":")).encode())


def public_jwk(key, kid):
    pub = key.public_key()
    if isinstance(pub, rsa.RSAPublicKey):
        n = pub.public_numbers()
        return {"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
                "n": b64u(n.n.to_bytes((n.n.bit_length() + 7) // 8, "big")),
                "e": b64u(n.e.to_bytes((n.e.bit_length() + 7) // 8, "big"))}
    n = pub.public_numbers()
    return {"kty": "EC", "kid": kid, "use": "sig", "crv": "P-256",
            "x": b64u(n.x.to_bytes(32, "big")), "y": b64u(n.y.to_bytes(32, "big"))}


def write_jwks(*jwks):
    with open(JWKS + ".tmp", "w", encoding="utf-8") as f:
        json.dump({"keys": list(jwks)}, f)
    os.replace(JWKS + ".tmp", JWKS)


def claims(**over):
    now = int(time.time())
    c = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "exp": now + 300, "iat": now,
         "databases": ["shop"], "scope": "query"}
    for k, v in over.items():
        if v is None:
            c.pop(k, None)
        else:
            c[k] = v
    return c


def sign(key, alg, kid, **over):
    return jwt.encode(claims(**over), key, algorithm=alg, headers={"kid": kid} if kid else None)


def bearer(token):
    return {"Authorization": "Bearer " + token}


DB = fixtures.write_sqlite(os.path.join(TMP, "shop.sqlite"),
                           "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);"
                           "CREATE TABLE payroll (id INTEGER PRIMARY KEY, salary INTEGER);",
                           {"customers": [(1, "Ada"), (2, "Bram")], "payroll": [(1, 5000)]})
OTHER = fixtures.write_sqlite(os.path.join(TMP, "other.sqlite"), "CREATE TABLE t (id INTEGER PRIMARY KEY);",
                              {"t": [(1,)]})


def config():
    return {
        "databases": [{"name": "shop", "url": "sqlite://" + DB}, {"name": "other", "url": "sqlite://" + OTHER}],
        "auth": {"api_keys": [{"name": "classic-app", "key_sha256": hashlib.sha256(API_KEY.encode()).hexdigest(),
                               "databases": ["other"]}],
                 "jwt": {"jwks_file": JWKS, "issuer": ISSUER, "audience": AUDIENCE, "leeway_s": 30},
                 "public_metrics": "full"},
        "log": {"level": "info", "access": True, "audit_file": AUDIT},
    }


def execute(svc, token, sql, db="shop"):
    return svc.request("POST", "/execute", json={"database": db, "sql": sql}, headers=bearer(token))


def refused(svc, token, name):
    r = execute(svc, token, "SELECT 1")
    fixtures.check_problem(tap, r, 401, "unauthorized", name)
    tap.ok("bearer" in (r.headers.get("WWW-Authenticate") or "").lower(), name + "_with_www_authenticate")
    return r


def check_tokens(svc, rsa_key, ec_key):
    r = execute(svc, sign(rsa_key, "RS256", "rsa-1"), "SELECT name FROM customers ORDER BY id")
    tap.eq((r.status, (r.json or {}).get("rows")), (200, [["Ada"], ["Bram"]]), "rs256_token_is_accepted")
    r = execute(svc, sign(ec_key, "ES256", "ec-1"), "SELECT count(*) FROM customers")
    tap.eq((r.status, (r.json or {}).get("rows")), (200, [[2]]), "es256_token_is_accepted")
    r = execute(svc, sign(rsa_key, "RS256", "rsa-1", aud=["other-service", AUDIENCE]), "SELECT 1")
    tap.eq(r.status, 200, "audience_array_holding_ours_is_accepted")
    r = execute(svc, sign(rsa_key, "RS256", "rsa-1", exp=int(time.time()) - 10), "SELECT 1")
    tap.eq(r.status, 200, "expiry_within_leeway_is_accepted")
    r = execute(svc, sign(ec_key, "ES256", None), "SELECT 1")
    tap.eq(r.status, 200, "token_without_kid_uses_the_only_key_of_its_type")

    refused(svc, sign(rsa_key, "RS256", "rsa-1", exp=int(time.time()) - 120), "expired_token_refused")
    refused(svc, sign(rsa_key, "RS256", "rsa-1", nbf=int(time.time()) + 600), "token_not_yet_valid_refused")
    refused(svc, sign(rsa_key, "RS256", "rsa-1", iss="https://evil.example.test"), "other_issuer_refused")
    refused(svc, sign(rsa_key, "RS256", "rsa-1", aud="another-service"), "other_audience_refused")
    refused(svc, sign(rsa_key, "RS256", "rsa-1", sub=None), "token_without_sub_refused")
    refused(svc, sign(rsa_key, "RS256", "rsa-1", exp=None), "token_without_exp_refused")
    refused(svc, sign(rsa_key, "RS256", "rsa-1", databases={"shop": 1}), "malformed_databases_claim_refused")
    refused(svc, sign(rsa_key, "RS256", "rsa-9"), "unknown_kid_refused")
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    refused(svc, sign(stranger, "RS256", "rsa-1"), "token_of_another_key_with_our_kid_refused")
    refused(svc, jwt.encode(claims(), rsa_key, algorithm="RS512", headers={"kid": "rsa-1"}), "rs512_refused")

    # alg none: no signature at all
    none = b64u_json({"alg": "none", "typ": "JWT"}) + "." + b64u_json(claims()) + "."
    r = refused(svc, none, "alg_none_refused")
    tap.ok("alg" in ((r.json or {}).get("detail") or ""), "alg_none_refusal_names_the_alg", diag=r.json)
    # HS256 whose HMAC secret is the RSA public key as published (the classic key confusion)
    pem = rsa_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    head = b64u_json({"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}) + "." + b64u_json(claims())
    confused = head + "." + b64u(hmac.new(pem, head.encode(), hashlib.sha256).digest())
    refused(svc, confused, "hs256_signed_with_the_public_key_refused")
    # a changed payload under the original signature, and a changed signature
    good = sign(rsa_key, "RS256", "rsa-1")
    h, p, s = good.split(".")
    admin_claims = b64u_json(claims(scope="query admin", databases=["*"]))
    refused(svc, h + "." + admin_claims + "." + s, "changed_payload_refused")
    sig = bytearray(base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)))
    sig[10] ^= 0x01
    refused(svc, h + "." + p + "." + b64u(bytes(sig)), "changed_signature_refused")
    es = sign(ec_key, "ES256", "ec-1")
    h2, p2, s2 = es.split(".")
    refused(svc, h2 + "." + b64u_json(claims(sub="mallory")) + "." + s2, "changed_es256_payload_refused")


def check_claims(svc, rsa_key):
    r = execute(svc, sign(rsa_key, "RS256", "rsa-1"), "SELECT 1", db="other")
    fixtures.check_problem(tap, r, 404, "not-found", "database_outside_the_databases_claim_is_404")
    r = svc.request("GET", "/databases", headers=bearer(sign(rsa_key, "RS256", "rsa-1")))
    tap.eq(sorted(d.get("name") for d in (r.json or {}).get("databases", [])), ["shop"],
           "database_list_follows_the_claim")
    r = svc.request("POST", "/databases/shop/refresh", headers=bearer(sign(rsa_key, "RS256", "rsa-1")))
    fixtures.check_problem(tap, r, 403, "forbidden", "query_scope_token_refused_on_admin_route")
    r = svc.request("POST", "/databases/shop/refresh", headers=bearer(sign(rsa_key, "RS256", "rsa-1",
                                                                          scope="openid query admin")))
    tap.eq(r.status, 200, "admin_scope_token_may_administer")
    r = svc.request("POST", "/databases/shop/refresh",
                    headers=bearer(sign(rsa_key, "RS256", "rsa-1", scope=["query", "admin"])))
    tap.eq(r.status, 200, "scope_claim_as_an_array")
    r = execute(svc, sign(rsa_key, "RS256", "rsa-1", databases=["*"]), "SELECT count(*) FROM t", db="other")
    tap.eq(r.status, 200, "star_reaches_every_database")
    limited = sign(rsa_key, "RS256", "rsa-1", tables={"shop": ["customers"]})
    r = execute(svc, limited, "SELECT salary FROM payroll")
    tap.ok(r.status == 400 and "no such table: payroll" in ((r.json or {}).get("detail") or ""),
           "tables_claim_hides_other_tables", diag=r.text[:300])
    r = execute(svc, limited, "SELECT count(*) FROM customers")
    tap.eq((r.status, (r.json or {}).get("rows")), (200, [[2]]), "tables_claim_keeps_its_tables")
    r = svc.request("GET", "/databases/shop", headers=bearer(limited))
    tap.eq([t.get("name") for t in (r.json or {}).get("tables", [])], ["customers"], "tables_claim_limits_the_schema")
    refused(svc, sign(rsa_key, "RS256", "rsa-1", tables=["customers"]), "malformed_tables_claim_refused")
    # Past the catalog's bound of table sets with indexes of their own (64), views share one index
    # slot: each still links only its own tables.
    for i in range(66):
        execute(svc, sign(rsa_key, "RS256", "rsa-1", tables={"shop": ["customers", "junk-%d" % i]}), "SELECT 1")
        svc.request("POST", "/link", json={"database": "shop", "question": "name"},
                    headers=bearer(sign(rsa_key, "RS256", "rsa-1", tables={"shop": ["customers", "junk-%d" % i]})))
    linked = []
    for i, table in enumerate(["payroll", "customers", "payroll", "customers"]):
        token = sign(rsa_key, "RS256", "rsa-1", tables={"shop": [table, "late-%d" % i]})
        r = svc.request("POST", "/link", json={"database": "shop", "question": "name salary id"}, headers=bearer(token))
        linked.append(sorted({t.get("name") for t in (r.json or {}).get("tables", [])}))
    tap.eq(linked, [["payroll"], ["customers"], ["payroll"], ["customers"]],
           "views_past_the_bound_share_an_index_slot_and_link_only_their_tables")
    r = execute(svc, API_KEY, "SELECT count(*) FROM t", db="other")
    tap.eq(r.status, 200, "api_keys_keep_working_beside_jwts")
    r = execute(svc, API_KEY, "SELECT 1", db="shop")
    tap.eq(r.status, 404, "api_key_keeps_its_databases")


def check_caller_named(svc, rsa_key):
    token = sign(rsa_key, "RS256", "rsa-1", sub="carol@example.test")
    r = execute(svc, token, "SELECT 42")
    rid = r.headers.get("X-Request-Id")
    line = fixtures.access_line(svc, rid, timeout=10)
    tap.ok(line and line.get("caller") == "carol@example.test", "access_log_names_the_subject", diag=line)
    def audit_lines():
        with open(AUDIT, encoding="utf-8") as f:
            return [x for x in (json.loads(y) for y in f if y.strip()) if x.get("request_id") == rid]
    fixtures.wait_until(lambda: audit_lines(), timeout=10)
    a = audit_lines()
    tap.ok(a and a[0].get("caller") == "carol@example.test", "audit_log_names_the_subject", diag=a)
    text = open(AUDIT, encoding="utf-8").read() + svc.log_text()
    tap.ok(token not in text and token.split(".")[2] not in text, "no_token_in_logs")
    m = svc.request("GET", "/metrics").text
    tap.ok('text2sqld_caller_requests_total{caller="jwt:carol@example.test"}' in m, "metrics_name_the_subject")
    tap.ok('text2sqld_caller_requests_total{caller="classic-app"}' in m, "metrics_name_the_api_key")
    # the label set stays bounded however many subjects call
    for i in range(110):
        execute(svc, sign(rsa_key, "RS256", "rsa-1", sub="user-%d" % i), "SELECT 1")
    m = svc.request("GET", "/metrics").text
    series = [x for x in m.splitlines() if x.startswith('text2sqld_caller_requests_total{caller="jwt:')]
    tap.ok(len(series) <= 101 and any('"jwt:other"' in x for x in series), "subject_labels_are_bounded",
           diag=len(series))


def check_public_routes(rsa_key):
    """/readyz and /metrics show a JWT caller what they show an API key: its databases' checks and series,
    its own caller series; without a token, the status alone and (public_metrics none) a 401."""
    write_jwks(public_jwk(rsa_key, "rsa-1"))  # the rotation checks left a broken file
    cfg = config()
    cfg["auth"]["public_metrics"] = "none"
    with t2s.Service(cfg) as svc:
        token = sign(rsa_key, "RS256", "rsa-1", sub="dora")
        tap.eq(execute(svc, token, "SELECT 1").status, 200, "public_routes_jwt_caller_runs_a_statement")
        r = svc.request("GET", "/readyz")
        tap.ok(r.status == 200 and set(r.json or {}) == {"status"}, "readyz_without_a_token_is_the_status_alone",
               diag=r.text[:300])
        r = svc.request("GET", "/readyz", headers=bearer(token))
        dbs = ((r.json or {}).get("checks") or {}).get("databases") or {}
        tap.eq(sorted(dbs), ["shop"], "readyz_shows_a_jwt_caller_the_checks_of_its_databases")
        r = svc.request("GET", "/readyz", headers=bearer(sign(rsa_key, "RS256", "rsa-1", exp=int(time.time()) - 600)))
        tap.ok(r.status == 200 and set(r.json or {}) == {"status"}, "readyz_with_an_expired_token_is_the_status_alone",
               diag=r.text[:300])
        r = svc.request("GET", "/metrics")
        tap.eq(r.status, 401, "metrics_without_a_token_refused_when_public_metrics_is_none")
        r = svc.request("GET", "/metrics", headers=bearer(token))
        m = r.text if r.status == 200 else ""
        tap.ok('database="shop"' in m and 'database="other"' not in m,
               "metrics_show_a_jwt_caller_the_series_of_its_databases", diag=r.status)
        tap.ok('caller="jwt:dora"' in m and 'caller="classic-app"' not in m,
               "metrics_show_a_jwt_caller_its_own_caller_series", diag=[x for x in m.splitlines() if "caller=" in x])
        fixtures.stop_ok(tap, svc, "public_routes_service_stops_cleanly")


def check_rotation(svc, rsa_key, ec_key):
    new_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    write_jwks(public_jwk(new_key, "rsa-2"), public_jwk(ec_key, "ec-1"))
    svc.proc.send_signal(signal.SIGHUP)
    ok = fixtures.wait_until(lambda: execute(svc, sign(new_key, "RS256", "rsa-2"), "SELECT 1").status == 200, timeout=10)
    tap.ok(ok, "after_sighup_the_new_keys_tokens_are_accepted")
    refused(svc, sign(rsa_key, "RS256", "rsa-1"), "after_sighup_the_removed_keys_tokens_are_refused")
    with open(JWKS, "w", encoding="utf-8") as f:
        f.write("{not json")
    svc.proc.send_signal(signal.SIGHUP)
    time.sleep(1.0)
    r = execute(svc, sign(new_key, "RS256", "rsa-2"), "SELECT 1")
    tap.eq(r.status, 200, "a_broken_jwks_on_reload_keeps_the_keys_in_force")
    tap.ok(svc.alive(), "service_alive_after_reloads")


def check_start_refusals():
    bad = os.path.join(TMP, "bad-jwks.json")
    weak = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    with open(bad, "w", encoding="utf-8") as f:
        json.dump({"keys": [public_jwk(weak, "weak")]}, f)
    cfg = config()
    cfg["auth"]["jwt"]["jwks_file"] = bad
    code, out = t2s.run_config_only(cfg, ["--check-config"])
    tap.ok(code != 0 and "auth.jwt.jwks_file" in out, "jwks_with_only_a_1024_bit_key_refused", diag=(code, out[-300:]))
    cfg["auth"]["jwt"]["jwks_file"] = os.path.join(TMP, "missing.json")
    code, out = t2s.run_config_only(cfg, ["--check-config"])
    tap.ok(code != 0 and "auth.jwt.jwks_file" in out, "missing_jwks_refused", diag=(code, out[-300:]))
    cfg = config()
    del cfg["auth"]["jwt"]["issuer"]
    code, out = t2s.run_config_only(cfg, ["--check-config"])
    tap.ok(code != 0 and "auth.jwt.issuer" in out, "jwt_without_issuer_refused", diag=(code, out[-300:]))


def main():
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    write_jwks(public_jwk(rsa_key, "rsa-1"), public_jwk(ec_key, "ec-1"))
    with t2s.Service(config()) as svc:
        check_tokens(svc, rsa_key, ec_key)
        check_claims(svc, rsa_key)
        check_caller_named(svc, rsa_key)
        check_rotation(svc, rsa_key, ec_key)
        fixtures.stop_ok(tap, svc, "stops_cleanly")
    check_public_routes(rsa_key)
    check_start_refusals()


if jwt is None:
    tap.skip("jwt_checks", "python3-jwt and python3-cryptography are not installed (scripts/install-deps.sh)")
    sys.exit(tap.done())
sys.exit(fixtures.run_with_binary(tap, "jwt_checks", main))
