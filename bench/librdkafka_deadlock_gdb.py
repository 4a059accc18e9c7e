"""gdb script for bench/librdkafka_deadlock.py's `--force` mode (`gdb -p PID -nx -iex "set
non-stop on" -x this`, commands on stdin): it makes the losing interleaving of the race happen
on purpose, so that the lock-order inversion shows in every trial instead of once in many runs.

In non-stop mode (a breakpoint stops only the thread that hits it) it holds two threads:

- the broker thread at the entry of `rd_kafka_toppar_forget_leader` (called by
  `rd_kafka_broker_fail` for each partition of a broker being decommissioned), before it takes
  the handle's read lock;
- the main thread at the entry of `rd_kafka_topic_leader_query0` called from
  `rd_kafka_toppar_handle_OffsetForLeaderEpoch`, where it holds the partition's lock (a hold of
  the main thread that the broker thread does not join within 2 s is a failure from before the
  purge, and is let go).

With both held it lets the broker thread go on for 0.5 s (it takes the read lock and waits for
the partition's lock), then detaches: the main thread asks for the write lock. With the lock
order of v2.10.0 onwards the two then wait on each other for ever. A librdkafka without
`rd_kafka_toppar_forget_leader` (v2.9 and earlier) has no such point: the script says so and
detaches at once.

Prints ARMED (the trial may go on), then HELD (both threads were held as above), NOT-HIT (not
both within 20 s; the threads are let go) or ABSENT (no such function).
"""
import threading

import gdb  # noqa: F401  (provided by gdb)

held: dict[str, int] = {}


class Hold(gdb.Breakpoint):
    """Stops the first thread that reaches `spec` (called from `caller`, when given), once."""

    def __init__(self, spec: str, key: str, caller: str | None = None) -> None:
        super().__init__(spec)
        self.key, self.caller = key, caller

    def stop(self) -> bool:
        if self.key in held:
            return False
        if self.caller is not None:
            older = gdb.selected_frame().older()
            if older is None or older.name() != self.caller:
                return False
        held[self.key] = gdb.selected_thread().num
        if self.key == "main":  # a failure from before the purge: let it go if the broker does not come
            threading.Timer(2.0, gdb.post_event, (let_main_go,)).start()
        return True


def let_main_go() -> None:
    """The main thread was held in a leader query while the broker thread never reached
    forget_leader (it waits for the partition's lock the held main thread has: that failure was
    not the purge's): release it and wait for the next."""
    if "broker" in held or "main" not in held or held.get("done"):
        return
    gdb.execute(f"thread {held.pop('main')}")
    gdb.execute("continue &")


def finish(outcome: str) -> None:
    if held.get("done"):
        return
    held["done"] = 1
    print(outcome, flush=True)
    gdb.execute("delete")
    gdb.execute("detach")  # the driver then closes gdb's stdin, and gdb exits


def on_stop(event) -> None:
    """Both threads held: let the broker thread take the read lock and block on the partition's
    lock (the main thread holds it), then detach: the main thread asks for the write lock."""
    if "broker" in held and "main" in held and "released" not in held:
        held["released"] = 1
        gdb.execute(f"thread {held['broker']}")
        gdb.execute("continue &")
        threading.Timer(0.5, gdb.post_event, (lambda: finish(f"HELD {held}"),)).start()


def arm() -> None:
    try:
        gdb.execute("info address rd_kafka_toppar_forget_leader", to_string=True)
    except gdb.error:
        finish("ABSENT")
        return
    Hold("rd_kafka_toppar_forget_leader", "broker")
    Hold("rd_kafka_topic_leader_query0", "main", caller="rd_kafka_toppar_handle_OffsetForLeaderEpoch")
    gdb.events.stop.connect(on_stop)
    threading.Timer(20.0, gdb.post_event, (lambda: finish("NOT-HIT"),)).start()
    gdb.execute("continue -a &")
    print("ARMED", flush=True)


def main() -> None:
    gdb.execute("set pagination off")
    # after every thread's attach stop has been reported (in non-stop mode they come one by one)
    threading.Timer(0.5, gdb.post_event, (arm,)).start()


main()
