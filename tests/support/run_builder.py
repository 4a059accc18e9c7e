"""Hand-made run directories for tests of reading and checking runs: `History` builds
history.jsonl lines with consecutive indices (sends, polls, assigns), `final_read` the
final.jsonl lines of one partition's final read, and `write_run` writes them, with a
test.json, into a run directory."""
from __future__ import annotations

import orjson


class History:
    """Builds history.jsonl lines with consecutive indices."""

    def __init__(self):
        self.lines = []

    def add(self, process, type_, f, value=None, **more):
        d = {"index": len(self.lines), "time": 100 * len(self.lines), "process": process,
             "type": type_, "f": f}
        if value is not None:
            d["value"] = value
        d.update(more)
        self.lines.append(d)
        return d["index"]

    def invoke_send(self, process, partition, value, topic="fp"):
        return self.add(process, "invoke", "send", {"topic": topic, "partition": partition,
                                                    "value": value})

    def complete_send(self, process, partition, value, type_="ok", offset=None, topic="fp"):
        v = {"topic": topic, "partition": partition, "value": value}
        if type_ == "ok":
            v.update(offset=offset, leader_epoch=1)
        return self.add(process, type_, "send", v)

    def poll(self, process, records):
        """records: (partition, offset, value)"""
        self.add(process, "invoke", "poll")
        return self.add(process, "ok", "poll", {"records": [
            {"topic": "fp", "partition": p, "offset": o, "value": v} for p, o, v in records]})

    def assign(self, process, partitions):
        value = {"partitions": [["fp", p] for p in partitions], "from": "beginning"}
        self.add(process, "invoke", "assign", value)
        return self.add(process, "ok", "assign", value)


def write_run(run_dir, history, final=None, test=None):
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "history.jsonl").write_bytes(b"".join(orjson.dumps(d) + b"\n" for d in history.lines))
    if final is not None:
        (run_dir / "final.jsonl").write_bytes(b"".join(orjson.dumps(d) + b"\n" for d in final))
    if test is not None:
        (run_dir / "test.json").write_bytes(orjson.dumps(test))
    return run_dir


def final_read(partition, records, complete=None):
    lines = [{"kind": "read", "topic": "fp", "partition": partition, "offset": o, "value": v}
             for o, v in records]
    if complete is not None:
        lines.append({"kind": "read-state", "topic": "fp", "partition": partition,
                      "complete": complete})
    return lines
