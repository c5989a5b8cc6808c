"""``python -m agent_inspect.samples [DIR]``: write every sample file (default: the checkout's sample_logs/)."""

from __future__ import annotations

import argparse

from agent_inspect.samples import write_samples


def _main() -> None:
    parser = argparse.ArgumentParser(prog="python -m agent_inspect.samples",
                                     description="Regenerate every sample log file (byte-identical on every run).")
    parser.add_argument("directory", nargs="?", default=None,
                        help="output directory (default: sample_logs/ of the source checkout)")
    for written in write_samples(parser.parse_args().directory):
        print(written)


if __name__ == "__main__":
    _main()
