"""`fencepost cluster up|status|down`: a cluster left running for work by hand.

`up` starts the system on fresh hosts, creates the test topic, prints the
bootstrap servers and node addresses, records the cluster under
`<results>/clusters/<name>/` and exits leaving it running; `status` shows each
node's state (running, paused, down) and any cuts; `down` stops everything and
removes the hosts.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fencepost.clusters import BACKENDS, TRUNCATIONS
from fencepost.harness.commands import examples
from fencepost.harness.errors import EXIT_VALID, BadInput

NAME = "cluster"
HELP = "start, inspect or stop a cluster left running (up, status, down)"
DEFAULT_NAME = "default"
EXAMPLES = (
    ("fencepost cluster up --backend process", "3 own brokers on this machine, left running"),
    ("fencepost cluster up --system kafka:3.9.1 --name k", "stock Kafka, named k"),
    ("fencepost cluster status", "every recorded cluster and its nodes"),
    ("fencepost cluster down --name k", "stop it and remove its hosts"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True,
                                    parser_class=type(parser))
    up = actions.add_parser("up", help="start a cluster on fresh hosts and leave it running",
                            formatter_class=argparse.RawDescriptionHelpFormatter,
                            epilog=examples(EXAMPLES[:2]))
    up.add_argument("--system", default="own", help="what runs on the hosts (default: own)")
    up.add_argument("--backend", choices=BACKENDS,
                    help="where the nodes are (default: netns as root on Linux, else process)")
    up.add_argument("--nodes", type=int, default=3, metavar="N", help="number of brokers (default 3)")
    up.add_argument("--truncation", choices=TRUNCATIONS,
                    help="follower truncation: the own broker's mode (default kip320), or for stock Kafka "
                         "its release's own protocol (release, the default) or an emulation through "
                         "inter.broker.protocol.version")
    up.add_argument("--flush", choices=("os", "fsync", "lazy"), default="os",
                    help="os, fsync (per message), or lazy: the nodes' data on the lazy filesystem, so that "
                         "power-cut loses what was not fsynced (default os)")
    up.add_argument("--kafka-home", metavar="DIR",
                    help="an unpacked Apache Kafka distribution for --system kafka (instead of Maven)")
    up.add_argument("--system-option", action="append", default=[], metavar="KEY=VALUE",
                    help="a system setting, repeatable (kafka: mode=kraft, controllers=3, ...; docs/KAFKA.md)")
    up.add_argument("--topic", default="fp", help="topic to create (default fp; '' for none)")
    up.add_argument("--partitions", type=int, default=3, help="partitions of the topic (default 3)")
    up.add_argument("--replication-factor", type=int, default=3,
                    help="replication factor of the topic (default 3, at most --nodes)")
    up.add_argument("--backend-option", action="append", default=[], metavar="KEY=VALUE",
                    help="a backend setting, repeatable (netns: subnet=10.77.0.0/24; docker: image=NAME; "
                         "ssh: see docs/hosts/ssh.md); VALUE is parsed as JSON when it can be")
    status = actions.add_parser("status", help="show a cluster's nodes and faults (all, without --name)",
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=examples(EXAMPLES[2:3]))
    down = actions.add_parser("down", help="stop a cluster and remove its hosts",
                              formatter_class=argparse.RawDescriptionHelpFormatter, epilog=examples(EXAMPLES[3:]))
    status.add_argument("--format", choices=("text", "json", "markdown"), default="text",
                        help="text (the default), json (a list of clusters with their nodes) or markdown (a table "
                             "per cluster)")
    for action in (up, status, down):
        action.add_argument("--name", default=None if action is not up else DEFAULT_NAME,
                            help=f"the cluster's name (default {DEFAULT_NAME})")
        action.add_argument("--results", type=Path, default=Path("results"),
                            help="the results folder; clusters are kept in RESULTS/clusters (default results)")


def run(args: argparse.Namespace) -> int:
    from fencepost.clusters import ClusterConfigError, HostError

    try:
        if args.action == "up":
            return _up(args)
        if args.action == "status":
            return _status(args)
        return _down(args)
    except ClusterConfigError as e:
        raise BadInput(str(e)) from None
    except HostError as e:
        print(f"fencepost cluster {args.action}: {e}", file=sys.stderr)
        return 1


def cluster_dir(results: Path, name: str) -> Path:
    from fencepost.clusters import check_name
    return results / "clusters" / check_name(name)


def parse_backend_options(pairs: list[str], flag: str = "--backend-option") -> dict:
    """KEY=VALUE pairs; VALUE parsed as JSON when it can be."""
    import json

    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise BadInput(f"{flag} {pair!r}: write KEY=VALUE, e.g. "
                           f"{'subnet=10.77.5.0/24' if flag == '--backend-option' else 'mode=kraft'}")
        try:
            options[key] = json.loads(value)
        except ValueError:
            options[key] = value
    return options


def _up(args: argparse.Namespace) -> int:
    from fencepost.clusters import Cluster, ClusterSpec, TopicSpec, default_backend, state_path
    from fencepost.harness.processes.interrupts import sigterm_as_interrupt
    from fencepost.harness.run.spec import MAX_NODES, MAX_PARTITIONS, TOPIC_NAME

    if not 1 <= args.nodes <= MAX_NODES:
        raise BadInput(f"--nodes {args.nodes}: give 1..{MAX_NODES} brokers")
    if args.topic and not (TOPIC_NAME.fullmatch(args.topic) and args.topic not in (".", "..")):
        raise BadInput(f"--topic {args.topic!r}: a Kafka topic name is 1..249 of letters, digits, '.', '_' and '-'")
    if args.topic and not 1 <= args.partitions <= MAX_PARTITIONS:
        raise BadInput(f"--partitions {args.partitions}: give 1..{MAX_PARTITIONS}")
    if args.topic and not 1 <= args.replication_factor <= args.nodes:
        raise BadInput(f"--replication-factor {args.replication_factor}: give 1..{args.nodes} (the brokers)")
    directory = cluster_dir(args.results, args.name)
    if state_path(directory).exists():
        existing = Cluster.attach(directory)
        running = [n for n in existing.nodes if existing.node_state(n) != "down"]
        if running:
            raise BadInput(f"cluster {args.name} is up already ({', '.join(running)} running): use it, or "
                           f"`fencepost cluster down --name {args.name}` first")
    spec = ClusterSpec(args.name, args.system, args.nodes, args.backend or default_backend(),
                       parse_backend_options(args.backend_option),
                       {**({"truncation": args.truncation} if args.truncation else {}), "flush": args.flush,
                        **parse_backend_options(args.system_option, "--system-option"),
                        **({"kafka_home": args.kafka_home} if args.kafka_home else {})})
    with sigterm_as_interrupt():
        cluster = Cluster.up(spec, directory, on_step=lambda step: print(f"  {step}", file=sys.stderr))
        if args.topic:
            cluster.create_topic(TopicSpec(args.topic, args.partitions, args.replication_factor))
    print(f"cluster {cluster.name} is up ({spec.system} on {spec.backend}); state in {directory}")
    print(f"bootstrap servers: {cluster.bootstrap}")
    _print_nodes(cluster)
    print(f"stop it with: fencepost cluster down --name {cluster.name}")
    return EXIT_VALID


def _print_nodes(cluster) -> None:
    status = cluster.status()
    for node, info in status["nodes"].items():
        pids = ", ".join(f"{role} pid {pid}" for role, pid in info["pids"].items())
        cut = cluster.cuts.get(node)
        print(f"  {node:<11} {info['address']:<15} {info['state']:<8} {pids}"
              + (f"  cut off from {', '.join(cut)}" if cut else ""))


def _status(args: argparse.Namespace) -> int:
    import json

    from fencepost.clusters import Cluster, recorded_clusters

    names = [args.name] if args.name else [d.name for d in recorded_clusters(args.results / "clusters")]
    clusters = [Cluster.attach(cluster_dir(args.results, name)) for name in names]
    if args.format == "json":
        print(json.dumps([_status_document(c) for c in clusters], indent=1))
        return EXIT_VALID
    if args.format == "markdown":
        print("\n".join(_status_markdown(c) for c in clusters)
              or f"no clusters recorded under `{args.results / 'clusters'}`")
        return EXIT_VALID
    if not names:
        print(f"no clusters recorded under {args.results / 'clusters'}")
    for name, cluster in zip(names, clusters):
        print(f"cluster {name}: {cluster.spec.system} on {cluster.spec.backend}, bootstrap {cluster.bootstrap}")
        _print_nodes(cluster)
    return EXIT_VALID


def _status_document(cluster) -> dict:
    """One cluster as `cluster status --format json` gives it: its system, backend, bootstrap
    servers, and each node's address, state (running, paused, down), processes and cuts."""
    status = cluster.status()
    return {"name": cluster.name, "system": cluster.spec.system, "backend": cluster.spec.backend,
            "bootstrap": cluster.bootstrap, "directory": str(cluster.directory),
            "nodes": {node: {"address": info["address"], "state": info["state"], "pids": info["pids"],
                             "cut_off_from": sorted(cluster.cuts.get(node, ()))}
                      for node, info in status["nodes"].items()}}


def _status_markdown(cluster) -> str:
    document = _status_document(cluster)
    lines = [f"**cluster {document['name']}**: {document['system']} on {document['backend']}, bootstrap "
             f"`{document['bootstrap']}`", "", "| node | address | state | processes | cut off from |",
             "|---|---|---|---|---|"]
    for node, info in document["nodes"].items():
        pids = ", ".join(f"{role} {pid}" for role, pid in info["pids"].items())
        lines.append(f"| {node} | {info['address']} | {info['state']} | {pids} | {', '.join(info['cut_off_from'])} |")
    return "\n".join(lines) + "\n"


def _down(args: argparse.Namespace) -> int:
    from fencepost.clusters import Cluster

    name = args.name or DEFAULT_NAME
    cluster = Cluster.attach(cluster_dir(args.results, name))
    cluster.down()
    print(f"cluster {name} is down; its hosts are removed (logs stay in {cluster.directory})")
    return EXIT_VALID
