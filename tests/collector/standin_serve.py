"""Run a Collector with the stand-in judge as its own process (for SIGTERM/SIGKILL tests).

Usage: ``python -m tests.collector.standin_serve CONFIG_JSON``. Prints one JSON line with the bound
ports once serving. The stand-in judge keeps these tests about delivery, not rules.
"""

from __future__ import annotations

import asyncio
import json
import sys

from tests.collector.collector_support import StandInJudge
from tracejudge.collector import Collector, build_config


async def main(raw: str) -> None:
    """Serve until SIGTERM, announcing the ports on stdout."""
    collector = Collector(build_config(json.loads(raw), {}), StandInJudge())
    task = asyncio.create_task(collector.serve_forever())
    while not collector.http_port:
        await asyncio.sleep(0.01)
    print(json.dumps({"grpc": collector.grpc_port, "http": collector.http_port}), flush=True)
    await task


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
