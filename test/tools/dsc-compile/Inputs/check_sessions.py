"""Checks the report's `memory.sessions` (dsc-compile --report=json --device-memory G)
against its own memory facts: free = device - weights - the largest activation
peak (tiled or not, 0 at the least), sessions = free // bytes per session, and
at the plan's max_seq_len a session's paged states are the whole plan states.
Prints one line per context; exits 1 with the reason otherwise."""
import json
import sys

report = json.load(sys.stdin)
mem = report["memory"]
cap = mem["sessions"]
peaks = list(mem["peak_bytes"].values()) + list(mem.get("peak_bytes_untiled", {}).values())
free = max(0, cap["device_bytes"] - mem["weights_bytes"] - max(peaks))
if cap["free_bytes"] != free:
    sys.exit(f"free_bytes {cap['free_bytes']} != {free}")
max_seq_len = report["options"]["max_seq_len"]
for row in cap["contexts"]:
    want = free // row["bytes_per_session"]
    if row["sessions"] != want:
        sys.exit(f"{row['tokens']} tokens: sessions {row['sessions']} != {want}")
    if row["tokens"] == max_seq_len and row["bytes_per_session"] != mem["state_bytes"]:
        sys.exit(f"at max_seq_len: {row['bytes_per_session']} != state_bytes {mem['state_bytes']}")
    print(f"{row['tokens']} tokens: {row['bytes_per_session']} B, {row['sessions']} sessions: OK")
