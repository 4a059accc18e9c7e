"""`fencepost nemesis start FAULT [--target T] | heal [--cluster NAME]`: faults by hand on a
cluster left running by `fencepost cluster up`.

`start` injects one fault and leaves it in place (a scenario such as
leader-bounce runs to its end); `heal` undoes every fault on the cluster — also
those another command made, since the cluster's saved state knows its cuts and
processes. Both append their nemesis ops to the cluster's own history,
`<results>/clusters/<name>/nemesis.jsonl` (docs/FORMATS.md, history.jsonl lines).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fencepost.harness.commands import examples
from fencepost.harness.errors import EXIT_VALID, BadInput

NAME = "nemesis"
HELP = "inject a fault into a running cluster by hand, or heal it (start, heal)"
HISTORY = "nemesis.jsonl"
EXAMPLES = (
    ("fencepost nemesis start pause --target leader", "pause the leader of a partition of fp"),
    ("fencepost nemesis start partition:majorities-ring --cluster k", "cut the network of cluster k"),
    ("fencepost nemesis heal", "undo every fault"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from fencepost.nemesis.spec import PARTITION_TARGETS, PROCESS_TARGETS

    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True,
                                    parser_class=type(parser))
    start = actions.add_parser("start", help="inject one fault and leave it in place",
                               formatter_class=argparse.RawDescriptionHelpFormatter, epilog=examples(EXAMPLES[:2]))
    start.add_argument("fault", metavar="FAULT",
                       help="partition, pause, kill, power-cut, leader-bounce, zombie, fast-leader-change, "
                            "kip101-divergence or last-replica-standing (NAME[:TARGET] works too)")
    start.add_argument("--target", choices=sorted({*PARTITION_TARGETS, *PROCESS_TARGETS}),
                       help=f"whom the fault hits: partition {', '.join(PARTITION_TARGETS)}; "
                            f"pause, kill, power-cut {', '.join(PROCESS_TARGETS)}")
    start.add_argument("--seed", type=int, help="seed for the choice of nodes (default: random)")
    start.add_argument("--topic", default="fp", help="the topic whose leader `leader` targets and scenarios use")
    start.add_argument("--partition", type=int, help="that topic's partition (default: chosen at random)")
    heal = actions.add_parser("heal", help="undo every fault: heal cuts, continue paused nodes, restart stopped ones",
                              formatter_class=argparse.RawDescriptionHelpFormatter, epilog=examples(EXAMPLES[2:]))
    for action in (start, heal):
        action.add_argument("--cluster", default="default", metavar="NAME", help="the cluster (default: default)")
        action.add_argument("--results", type=Path, default=Path("results"),
                            help="the results folder the cluster is recorded in (default results)")
        action.add_argument("--timeout", type=float, default=30.0,
                            help="seconds to wait for the cluster at each step (default 30)")


def run(args: argparse.Namespace) -> int:
    import orjson

    from fencepost.clusters import Cluster, ClusterConfigError, HostError
    from fencepost.harness.commands.cluster import cluster_dir
    from fencepost.harness.run.spec import MAX_SECONDS
    from fencepost.harness.rundir.history import HistoryWriter, Recorder
    from fencepost.nemesis import heal_cluster, parse_fault, start_fault

    if not 0 < args.timeout <= MAX_SECONDS:  # also nan
        raise BadInput(f"--timeout {args.timeout:g}: give seconds > 0, at most {MAX_SECONDS:g}")
    try:
        if args.action == "start":  # a bad fault is refused before the cluster is looked up
            named = parse_fault(args.fault)
            if args.target is not None:
                parse_fault(f"{named.name}:{args.target}")
        cluster = Cluster.attach(cluster_dir(args.results, args.cluster))
        with HistoryWriter(cluster.directory / HISTORY) as writer:
            recorder = Recorder(writer)
            if args.action == "heal":
                done = heal_cluster(cluster, recorder, args.timeout)
                print("\n".join(done) if done else f"cluster {args.cluster}: nothing to heal")
                return EXIT_VALID
            fault = start_fault(cluster, args.fault, recorder, target=args.target, seed=args.seed,
                                topic=args.topic, partition=args.partition, timeout=args.timeout)
            print(f"{args.fault}{':' + args.target if args.target else ''}: {orjson.dumps(fault.done).decode()}")
            print(f"undo it with: fencepost nemesis heal --cluster {args.cluster}")
            return EXIT_VALID
    except ClusterConfigError as e:
        raise BadInput(str(e)) from None
    except HostError as e:
        print(f"fencepost nemesis {args.action}: {e}", file=sys.stderr)
        print(f"what was done stays in place; `fencepost nemesis heal --cluster {args.cluster}` undoes it",
              file=sys.stderr)
        return 1
