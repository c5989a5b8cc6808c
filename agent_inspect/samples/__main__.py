"""``python -m agent_inspect.samples [DIR]``: write every sample file (default: the checkout's sample_logs/)."""

from __future__ import annotations

import sys

from agent_inspect.samples import write_samples

if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else None
    for written in write_samples(target):
        print(written)
