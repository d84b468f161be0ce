from astral_dsl.cli import main

raise SystemExit(main())
