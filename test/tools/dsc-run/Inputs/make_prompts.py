"""Writes a JSONL prompts file for prompts.test: turns of a conversation on a
shared 120-token prefix (tiny6's vocabulary of 1024), seeded."""
import json
import random
import sys

random.seed(3)
base = [random.randrange(1024) for _ in range(120)]
lines = [
    {"prompt_ids": base[:100], "max_new_tokens": 4},
    {"prompt_ids": base[:100] + [5, 6, 7] * 10, "max_new_tokens": 4},
    {"prompt_ids": base, "max_new_tokens": 3},
    {"prompt_ids": base + [9] * 60},
]
with open(sys.argv[1], "w") as f:
    f.write("\n".join(json.dumps(line) for line in lines) + "\n\n")
