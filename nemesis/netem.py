"""The settings of the netem fault, pure: what `tc qdisc ... netem` is given (Jepsen's packet
nemesis, Trogdor's degraded network).

| setting | default | netem |
|---|---|---|
| `delay_ms` | 50 | `delay 50ms` — every packet the node sends waits this long |
| `jitter_ms` | 25 | `delay 50ms 25ms` — uniformly up to this much more or less (0: none) |
| `loss_pct` | 5 | `loss 5%` — packets dropped |
| `duplicate_pct` | 5 | `duplicate 5%` — packets sent twice |
| `reorder_pct` | 10 | `reorder 10%` — packets sent at once, ahead of delayed ones (needs a delay) |
| `correlation_pct` | 25 | the correlation of each with the previous packet's draw |

Every percentage is 0..100 and 0 leaves that behaviour out; a test spec sets them in
`[nemesis.netem]`.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping

from fencepost.clusters import ClusterConfigError


@dataclass(frozen=True)
class NetemOptions:
    delay_ms: float = 50.0
    jitter_ms: float = 25.0
    loss_pct: float = 5.0
    duplicate_pct: float = 5.0
    reorder_pct: float = 10.0
    correlation_pct: float = 25.0

    @staticmethod
    def from_mapping(data: Mapping[str, Any] | None) -> NetemOptions:
        """Checked settings; ClusterConfigError naming the bad one and what is allowed."""
        data = dict(data or {})
        known = [f.name for f in fields(NetemOptions)]
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ClusterConfigError(f"unknown netem setting {unknown[0]!r}: the settings are {', '.join(known)}")
        for name, value in data.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ClusterConfigError(f"netem {name} = {value!r}: give a number")
            high = 100.0 if name.endswith("_pct") else 60_000.0
            if not 0 <= value <= high:
                raise ClusterConfigError(f"netem {name} = {value!r}: give 0..{high:g}")
        options = NetemOptions(**{k: float(v) for k, v in data.items()})
        if options.reorder_pct and not options.delay_ms:
            raise ClusterConfigError("netem reorder_pct needs delay_ms > 0: netem reorders by sending some "
                                     "packets ahead of the delayed ones")
        if not any((options.delay_ms, options.loss_pct, options.duplicate_pct, options.reorder_pct)):
            raise ClusterConfigError("netem with delay_ms, loss_pct, duplicate_pct and reorder_pct all 0 does "
                                     "nothing: give at least one")
        return options

    def to_json(self) -> dict[str, float]:
        return asdict(self)

    def tc_args(self) -> list[str]:
        """The netem part of the tc command: `delay 50ms 25ms 25% loss 5% 25% ...`."""
        corr = [_pct(self.correlation_pct)] if self.correlation_pct else []
        args: list[str] = []
        if self.delay_ms:
            args += ["delay", _ms(self.delay_ms)]
            if self.jitter_ms:
                args += [_ms(self.jitter_ms), *corr]
        for word, pct in (("loss", self.loss_pct), ("duplicate", self.duplicate_pct),
                          ("reorder", self.reorder_pct)):
            if pct:
                args += [word, _pct(pct), *corr]
        return args


def _ms(value: float) -> str:
    return f"{value:g}ms"


def _pct(value: float) -> str:
    return f"{value:g}%"
