"""The store: every experiment and run in SQLite, committed the moment each
run ends, so nothing measured is lost; everything a report shows is derived
from it alone (docs/architecture.md#the-store). Its records (`records`) are
what every later stage reads; `schema` holds its tables, `migrate` brings an
older store to them, `sqlite` reads and writes them."""

from corebench.store.records import (
    AgentCeiling,
    Baseline,
    BaselineLevel,
    Capacity,
    Ceiling,
    CoreTimes,
    HostFacts,
    Level,
    LoadNode,
    LoopModel,
    MonitorSummary,
    PlanRecord,
    RaySpent,
    RunLayout,
    ServiceSummary,
    Step,
    StoredExperiment,
    StoredRun,
    TargetInfo,
)
from corebench.store.schema import SCHEMA_VERSION
from corebench.store.sqlite import Store, Stored, StoreError, StoreWriteError

__all__ = [
    "SCHEMA_VERSION",
    "Baseline",
    "BaselineLevel",
    "Capacity",
    "AgentCeiling",
    "Ceiling",
    "CoreTimes",
    "HostFacts",
    "Level",
    "LoadNode",
    "LoopModel",
    "MonitorSummary",
    "RaySpent",
    "PlanRecord",
    "RunLayout",
    "ServiceSummary",
    "Step",
    "Store",
    "Stored",
    "StoreError",
    "StoreWriteError",
    "StoredExperiment",
    "StoredRun",
    "TargetInfo",
]
