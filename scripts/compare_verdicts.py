#!/usr/bin/env python3
"""Compares `chainsig verify` output with the `expect` fields of a `chainsig gen` file.

Usage: compare_verdicts.py GEN.jsonl VERDICTS.jsonl
Prints the counts and exits 1 on any disagreement, missing or reordered line.
"""
import json
import sys

gen_path, out_path = sys.argv[1], sys.argv[2]
with open(gen_path) as g, open(out_path) as o:
    expected = [json.loads(line)["expect"] for line in g if line.strip()]
    got = [json.loads(line) for line in o if line.strip()]
in_order = [v["line"] for v in got] == list(range(1, len(expected) + 1))
disagree = sum(1 for e, v in zip(expected, got) if v.get("valid") is not e)
valid = sum(1 for v in got if v.get("valid") is True)
print(f"records {len(expected)} verdicts {len(got)} disagreements with generator {disagree} "
      f"in order {in_order} valid {valid}")
sys.exit(0 if in_order and disagree == 0 and len(got) == len(expected) else 1)
