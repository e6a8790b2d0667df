"""Summarises `dsc-compile --emit=plan-json` for FileCheck: per program its
launch count, replayed launches, kernel launches per layer (a fusion counts
once, as launchesByLayer in Plan.h does) and each fusion with the kernels
of its steps. Names and structure only: no kernel parameters (their encoding
is plan.fbs's business, not the lowering's).

usage: plan_summary.py PLAN.json
"""
import json
import sys

plan = json.load(open(sys.argv[1]))
names = [k["name"] for k in plan["kernels"]]
for program in plan["programs"]:
    launches = program["launches"]
    replayed = sum(1 for l in launches if l["replay"])
    print(f"program {program['name']}: {len(launches)} launches, "
          f"{len(program['fusions'])} fusions, {replayed} replayed")
    per_layer = {}
    seen = set()
    for l in launches:
        if l["fusion"] >= 0:
            if l["fusion"] in seen:
                continue
            seen.add(l["fusion"])
        per_layer[l["layer"]] = per_layer.get(l["layer"], 0) + 1
    print("  kernel launches by layer: " +
          ", ".join(f"{layer}: {n}" for layer, n in sorted(per_layer.items())))
    for i, fusion in enumerate(program["fusions"]):
        steps = [l for l in launches if l["fusion"] == i]
        marks = {l["replay"] for l in steps}
        replay = "replay" if marks == {True} else "mixed" if len(marks) > 1 else "all rows"
        print(f"  fusion {i} {fusion['kernel']} layer {fusion['layer']} "
              f"tile_rows {fusion['tile_rows']} ({replay}): " +
              " ".join(names[l["kernel"]] for l in steps))
