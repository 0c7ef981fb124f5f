from objtier.cli import main

raise SystemExit(main())
