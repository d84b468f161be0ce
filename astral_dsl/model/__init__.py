"""The compiled design model: typed, immutable, replication kept symbolic."""
from astral_dsl.model.design import CheckResult, Design, Instance, Member, Ref
from astral_dsl.model.rollup import count_of, group_of, power_of, PLURALS

__all__ = ["CheckResult", "Design", "Instance", "Member", "PLURALS", "Ref", "count_of",
           "group_of", "power_of"]
