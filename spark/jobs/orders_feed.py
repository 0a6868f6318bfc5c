"""Feed JSON orders into a topic: the input of orders_per_minute (`make spark-demo`, tests/spark).

    python -m replog.spark.jobs.orders_feed [--bootstrap HOST:PORT] [--topic orders] [--count 600]
                                            [--minutes 5] [--start 2024-01-01T10:00:00Z]

Orders are spread evenly over `--minutes` minutes of event time from `--start`, with a last
order two minutes later whose only purpose is to move the job's watermark past the others
(windows are written once the watermark closes them). The same orders come out every run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys

from replog.cli.bootstrap import add_cluster_arguments, bootstrap_address, user_message
from replog.client import ClientError, Producer

CLOSING_ORDER_DELAY_S = 120


def orders(count: int, minutes: int, start: datetime.datetime) -> list[dict]:
    """The orders, in event-time order; the last one closes the windows of the others."""
    step_s = minutes * 60 / count
    made = [{"order_id": f"o-{i}", "customer": f"c-{i % 7}", "amount": float(i % 10 + 1),
             "ts": (start + datetime.timedelta(seconds=i * step_s)).isoformat()} for i in range(count)]
    closing = start + datetime.timedelta(seconds=minutes * 60 + CLOSING_ORDER_DELAY_S)
    return made + [{"order_id": "closing", "customer": "-", "amount": 0.0, "ts": closing.isoformat()}]


def per_minute(made: list[dict]) -> dict[str, tuple[int, float]]:
    """{minute start (ISO, UTC): (orders, revenue)} of the orders the windows close on."""
    found: dict[str, tuple[int, float]] = {}
    for order in made[:-1]:
        minute = datetime.datetime.fromisoformat(order["ts"]).replace(second=0, microsecond=0).isoformat()
        count, revenue = found.get(minute, (0, 0.0))
        found[minute] = (count + 1, revenue + order["amount"])
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="orders_feed", description=__doc__.splitlines()[0])
    add_cluster_arguments(parser)
    parser.add_argument("--topic", default="orders")
    parser.add_argument("--count", type=int, default=600)
    parser.add_argument("--minutes", type=int, default=5)
    parser.add_argument("--start", default="2024-01-01T10:00:00+00:00", type=datetime.datetime.fromisoformat)
    args = parser.parse_args(argv)
    if args.count <= 0 or args.minutes <= 0:
        parser.error("--count and --minutes must be positive")
    try:
        with Producer(bootstrap_address(args), acks="all") as producer:
            made = orders(args.count, args.minutes, args.start.astimezone(datetime.timezone.utc))
            for order in made:
                producer.send(args.topic, json.dumps(order).encode(), key=order["customer"].encode())
            producer.flush(60)
    except ClientError as error:
        print(f"orders_feed: {user_message(error)}", file=sys.stderr)
        return 1
    print(f"sent {len(made)} orders to {args.topic}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
