"""The systems a runs table's rows are placed on (`System`): each a scalable unit of the stdlib
(stdlib/systems.astral) or of a user's --gpu-file (runs/systems.py), by the key the rows'
`system` and `gpu` columns are matched to (runs/parts.py)."""
from __future__ import annotations

from typing import Dict

from astral_dsl import records


@records.frozen
class System:
    """A system a run is placed on: its scalable unit (a `block`), fabric and GPUs per SU; a
    stdlib one (stdlib/systems.astral) or one of a user's --gpu-file (runs/systems.py), whose
    declarations (`prelude`) come before the run's own."""
    key: str
    su: str
    fabric: str
    gpus_per_su: int
    gpu: str                         # the GPU's name (a stdlib or the user's template)
    prelude: str = ""                # the source declaring `su` and `fabric` (default: stdlib)
    root: str = ""                   # where the prelude's imports resolve (its project)
    file: str = ""                   # the file the prelude comes from
    problem: str = ""                # why no run can be placed on it

    def header(self) -> str:
        return self.prelude or f"import stdlib.systems {{ {self.su}, {self.fabric} }}"


SYSTEMS: Dict[str, System] = {s.key: s for s in (
    System("DGX-A100", "DGX_A100_SU", "DGX_A100_Fabric", 160, "A100_80GB"),
    System("DGX-H100", "DGX_H100_SU", "NDR_Fabric", 256, "H100_SXM"),
    System("DGX-H200", "DGX_H200_SU", "NDR_Fabric", 256, "H200"),
    System("HGX-H800", "HGX_H800_SU", "NDR_Fabric", 256, "H800"),
    System("DGX-B200", "DGX_B200_SU", "NDR_Fabric", 256, "B200"),
    System("DGX-GB200", "DGX_GB200_SU", "GB200_Fabric", 576, "GB200"),
    System("GrandTeton-H100-500W", "GrandTeton_SU", "RoCE_Fabric", 256, "H100_SXM_96GB_500W"),
)}
