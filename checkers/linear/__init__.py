"""Linearizability checking: a Wing-Gong/Lowe search over pluggable models, the
log model of a Kafka partition, minimal counterexamples and their picture.

  model.py     the model interface (Porcupine-small) and `Op`; the optional hints
  reference_witness.py  a proposed order checked against any model: the reference
               `kafka.greedy_witness` is held to by the tests
  models.py    RegisterModel, SetModel
  logmodel.py  LogModel (a partition's log)
  search.py    check(model, ops, budget) -> SearchResult
  minimize.py  minimize(...) -> Counterexample (ddmin with read-from closure)
  visual.py    render_html(counterexample) -> str
  kafka.py     PartitionHistory -> ops; check_partition -> LinearResult

docs/LINEARIZABILITY.md states the model, the translation and the search.
"""
from fencepost.checkers.linear.logmodel import Append, LogModel, Read, ReadExact
from fencepost.checkers.linear.model import Explains, MinimiseHints, Model, Op, SearchHints
from fencepost.checkers.linear.models import RegisterModel, SetModel
from fencepost.checkers.linear.search import Deepest, SearchResult, check

__all__ = [
    "Append", "Deepest", "Explains", "LogModel", "MinimiseHints", "Model", "Op", "Read", "ReadExact",
    "RegisterModel", "SearchHints", "SearchResult", "SetModel", "check",
]
