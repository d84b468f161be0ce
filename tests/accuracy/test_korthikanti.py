"""Seer against Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer
Models", arXiv 2205.05198), Table 5: eight measured iteration times on Selene with DP = 1
(seer.md). Targets: mean |error| <= 3.5 %, max <= 8 %."""

# (job in selene.astral, label, measured seconds per iteration)
ROWS = [
    ("k22b_full", "22B  TP8 PP1  full recompute", 1.42),
    ("k22b_sel", "22B  TP8 PP1  SP + selective", 1.10),
    ("k175b_full", "175B TP8 PP8 v3  full recompute", 18.13),
    ("k175b_sel", "175B TP8 PP8 v3  SP + selective", 13.75),
    ("k530b_full", "530B TP8 PP35 v3  full recompute", 49.05),
    ("k530b_sel", "530B TP8 PP35 v3  SP + selective", 37.83),
    ("k1t_full", "1T   TP8 PP64  full recompute", 94.42),
    ("k1t_sel", "1T   TP8 PP64  SP + selective", 71.49),
]


def test_korthikanti_table5(accuracy):
    mean, worst, lines = accuracy.run("Korthikanti et al. 2022, Table 5 (A100, DP = 1)", ROWS)
    assert mean <= 3.5, "\n".join(lines)
    assert worst <= 8.0, "\n".join(lines)
