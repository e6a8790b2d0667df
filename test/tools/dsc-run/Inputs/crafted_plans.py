"""Derives crafted plans from a good plan and checks that dsc-run rejects each
with exit status 1 (an error, not a signal) and the expected message.

usage: crafted_plans.py SCHEMA PLAN DSC_RUN WEIGHTS WORKDIR
The plan goes through `flatc --json`, is edited, and comes back with `flatc -b`.
"""
import copy, json, os, subprocess, sys

schema, plan, dsc_run, weights, work = sys.argv[1:6]
os.makedirs(work, exist_ok=True)
subprocess.run(["flatc", "--json", "--raw-binary", "--strict-json", "-o", work, schema, "--", plan],
               check=True)
base = json.load(open(os.path.join(work, os.path.splitext(os.path.basename(plan))[0] + ".json")))
prefill = next(p for p in base["programs"] if p["name"] == "prefill")


def value_index(p, name):
    return next(i for i, v in enumerate(p["values"]) if v.get("name") == name)


def state(p, name):
    return next(s for s in p["states"] if s["name"] == name)


def kernel_launches(p, prog, kernel):
    return [l for l in prog["launches"] if p["kernels"][l.get("kernel", 0)]["name"] == kernel]


def set_param(p, prog, kernel, key, value):
    """Gives the first launch of `kernel` a private spec with `key` = value."""
    launch = kernel_launches(p, prog, kernel)[0]
    spec = copy.deepcopy(p["kernels"][launch.get("kernel", 0)])
    spec["params"][key] = value  # the kernel's typed table (kernel_params.fbs)
    p["kernels"].append(spec)
    launch["kernel"] = len(p["kernels"]) - 1


def weight_output(p):
    pr = p["programs"][0]
    pr["outputs"][0] = value_index(pr, "embed.weight")


def rank(p):
    pr = p["programs"][0]
    pr["values"][value_index(pr, "hc_expand")]["shape"] = [-1]


def tokens_per_page(p):
    state(p, "layers.0.window")["layout"]["tokens_per_page"] = 0


def overflow(p):
    pr = p["programs"][0]
    pr["values"][value_index(pr, "embed")]["shape"] = [-1, 2 ** 61]


def kv_capacity(p):
    s = state(p, "layers.1.index_keys")
    s["capacity"] = 1
    s["layout"]["tokens_per_page"] = 1


def head_dtype(p):
    pr = p["programs"][0]
    pr["values"][value_index(pr, "head")]["dtype"] = "BF16"


def compressor_state(p):
    for pr in p["programs"]:
        for v in pr["values"]:
            if v.get("name") == "layers.1.compressor_state":
                v["shape"] = [2, 2, 1]


def groups0(p):
    set_param(p, p["programs"][0], "grouped_output", "groups", 0)


cases = [
    (weight_output, "output 0 is value", "a Weight value (program outputs are Activation or State"),
    (rank, "launch 2 (hc_expand): output 0 (stream, value 'hc_expand') has rank 1, expected 3", ""),
    (tokens_per_page, "'layers.0.window' (WindowRing): record layout: tokensPerPage 0 must be positive", ""),
    (overflow, "value 4 'embed': shape [-1, 2305843009213693952] has dimension 2305843009213693952",
     "above the limit of 2147483648 (2^31, Plan.h kMaxDim)"),
    (kv_capacity, "index_keys: entry", "exceeds the index-key buffer's capacity 1"),
    (head_dtype, "(head): output 0 (logits, value 'head') is BF16, expected F32", ""),
    (compressor_state, "'layers.1.compressor_state': is F32 [2, 2, 1], expected F32 [2, 2, 128]", ""),
    (groups0, "(grouped_output): parameter 'groups' is 0, expected >= 1", ""),
]
ids = os.path.join(work, "ids.txt")
open(ids, "w").write(" ".join(["1"] * 40) + "\n")
failures = 0
for mutate, want, want2 in cases:
    name = mutate.__name__
    p = copy.deepcopy(base)
    mutate(p)
    src = os.path.join(work, name + ".json")
    json.dump(p, open(src, "w"))
    subprocess.run(["flatc", "-b", "-o", work, schema, src], check=True)
    r = subprocess.run([dsc_run, os.path.join(work, name + ".dscp"), "--weights", weights,
                        "--input-ids", ids, "--prefill-len", "30"],
                       capture_output=True, text=True)
    ok = r.returncode == 1 and want in r.stderr and want2 in r.stderr
    print(f"{name}: exit {r.returncode} {'ok' if ok else 'UNEXPECTED'}: {r.stderr.strip()}")
    failures += not ok
print("crafted plans:", "PASS" if failures == 0 else f"{failures} FAILED")
sys.exit(1 if failures else 0)
