#!/usr/bin/env python3
"""Build BIRD-format questions with evidence from a Spider file that has
synonym paraphrases (spider-train's `question_syn`).

Each entry becomes {db_id, question, evidence, SQL}: the question is the
paraphrase a user would type ("... the leaders who ..."), and the evidence is
the BIRD-style hint an annotator who knows the schema would write for it,
"leaders refers to heads", taken from where the paraphrase and the original
question differ word for word (difflib's replaced spans). Entries whose
paraphrase equals the question get no evidence and are left out, so the set
measures what evidence adds where users do not use the schema's words.

    python3 bench/bird_evidence.py ../shared/datasets/spider-train/train.json > /tmp/train-bird.json
    python3 bench/link_eval.py --dataset ../shared/datasets/spider-train --questions /tmp/train-bird.json \
        --url URL [--evidence]
"""
import difflib
import json
import re
import sys

WORD = re.compile(r"[A-Za-z0-9_']+|[^\sA-Za-z0-9_']")


def evidence_for(original, paraphrase):
    """'x refers to y; ...' for each span the paraphrase replaced, or None."""
    a, b = WORD.findall(original), WORD.findall(paraphrase)
    hints = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=[w.lower() for w in a], b=[w.lower() for w in b],
                                                      autojunk=False).get_opcodes():
        if op != "replace":
            continue
        said, meant = " ".join(b[j1:j2]), " ".join(a[i1:i2])
        if said.strip() and meant.strip() and len(b[j1:j2]) <= 4 and len(a[i1:i2]) <= 4:
            hints.append("%s refers to %s" % (said, meant))
    return "; ".join(hints) or None


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: bird_evidence.py SPIDER_JSON_WITH_question_syn")
    with open(sys.argv[1], encoding="utf-8") as f:
        data = json.load(f)
    out = []
    for q in data:
        syn = q.get("question_syn")
        if not isinstance(syn, str):
            continue
        ev = evidence_for(q["question"], syn)
        if ev:
            out.append({"db_id": q["db_id"], "question": syn, "evidence": ev, "SQL": q["query"]})
    json.dump(out, sys.stdout, indent=1)
    print(file=sys.stderr, end="%d of %d entries have evidence\n" % (len(out), len(data)))


if __name__ == "__main__":
    main()
