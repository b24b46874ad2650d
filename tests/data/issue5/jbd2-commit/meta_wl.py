"""Metadata-only updates (no fsync): ext4's journal commits them every commit= seconds."""

import os
import sys
import time

d = sys.argv[1]
stop = time.monotonic() + float(sys.argv[2])
i = 0
os.makedirs(d, exist_ok=True)
while time.monotonic() < stop:
    p = os.path.join(d, f"f{i % 200}")
    with open(p, "a"):
        pass
    os.chmod(p, 0o600 | (i % 2) * 0o044)
    i += 1
    time.sleep(0.02)
