"""Realtime lag (harness/measures/lag.py), from ops fed as the history scan feeds them:
a consumer keeping up, one stuck, one whose polls fail, an assign from the beginning,
a subscriber reading every partition."""
from __future__ import annotations

from fencepost.harness.measures.lag import RealtimeLag
from fencepost.harness.rundir.history import Op

S = 1_000_000_000


class _History:
    """Ops in file order, numbered."""

    def __init__(self) -> None:
        self.ops: list[Op] = []

    def add(self, t: float, process, type_: str, f: str, value=None) -> None:
        self.ops.append(Op(len(self.ops), int(t * S), process, type_, f, value))

    def ack(self, t: float, partition: int, offset: int) -> None:
        value = {"topic": "fp", "partition": partition, "value": f"v{partition}-{offset}"}
        self.add(t - 0.001, 0, "invoke", "send", value)
        self.add(t, 0, "ok", "send", {**value, "offset": offset})

    def poll(self, t: float, process: int, offsets: list[int], partition: int = 0, type_: str = "ok") -> None:
        self.add(t, process, "invoke", "poll")
        records = [{"topic": "fp", "partition": partition, "offset": o, "value": f"v{partition}-{o}"}
                   for o in offsets]
        self.add(t + 0.001, process, type_, "poll", {"records": records} if type_ == "ok" else None)

    def assign(self, t: float, process: int, partitions: list[int], start) -> None:
        value = {"partitions": [["fp", p] for p in partitions], "from": start}
        self.add(t, process, "invoke", "assign", value)
        self.add(t + 0.0001, process, "ok", "assign", value)

    def lags(self) -> dict[int, list[tuple[float, float]]]:
        lag = RealtimeLag()
        for op in self.ops:
            lag(op)
        return {p: [(round(t / S, 3), round(x / S, 3)) for t, x in zip(s.times, s.lags)]
                for p, s in lag.series.items()}


def test_a_consumer_keeping_up_stays_near_zero_and_a_stuck_one_rises_a_second_per_second():
    h = _History()
    h.assign(0.0, 1000, [0], "beginning")
    h.assign(0.0, 1001, [0], "beginning")
    for offset in range(10):
        h.ack(offset + 1.0, 0, offset)  # offset k acked at k+1 s
    h.poll(5.5, 1000, [0, 1, 2, 3])  # offset 4 (acked at 5 s) not read yet: 0.5 s behind
    h.poll(8.2, 1000, [4, 5, 6, 7])  # everything acked before 8.2 read
    h.poll(10.5, 1000, [8, 9])
    for t in (6.0, 8.0, 10.0):
        h.poll(t, 1001, [])  # stuck: returns nothing
    lags = h.lags()
    assert lags[1000] == [(5.5, 0.5), (8.2, 0.0), (10.5, 0.0)]
    assert lags[1001] == [(6.0, 5.0), (8.0, 7.0), (10.0, 9.0)]  # the oldest unread: offset 0, acked at 1 s


def test_failed_polls_count_and_an_assign_from_the_beginning_forgets_what_was_read():
    h = _History()
    h.assign(0.0, 1000, [0], "beginning")
    for offset in range(4):
        h.ack(offset + 1.0, 0, offset)
    h.poll(4.5, 1000, [0, 1, 2, 3])
    h.poll(6.0, 1000, [], type_="fail")
    h.ack(6.5, 0, 4)
    h.poll(7.0, 1000, [], type_="info")  # reads nothing: offset 4 is 0.5 s old
    h.assign(8.0, 1000, [0], "beginning")  # starts over: offset 0 unread again
    h.poll(9.0, 1000, [0])
    h.assign(10.0, 1000, [0], {"fp-0": 4})  # from a committed offset: 0-3 count as read
    h.poll(11.0, 1000, [])
    assert h.lags()[1000] == [(4.5, 0.0), (6.0, 0.0), (7.0, 0.5), (9.0, 7.0), (11.0, 4.5)]


def test_a_subscriber_is_as_far_behind_as_its_worst_partition():
    h = _History()
    h.add(0.0, 1000, "invoke", "subscribe", {"topics": ["fp"]})
    h.add(0.001, 1000, "ok", "subscribe", {"topics": ["fp"]})
    h.ack(1.0, 0, 0)
    h.ack(2.0, 1, 0)
    h.poll(3.0, 1000, [0], partition=1)  # read fp-1, not fp-0: fp-0's write is 2 s old
    h.poll(4.0, 1000, [0], partition=0)
    assert h.lags()[1000] == [(3.0, 2.0), (4.0, 0.0)]
    assert RealtimeLag().series == {}
