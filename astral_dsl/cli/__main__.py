from astral_dsl.cli import entry

entry()
