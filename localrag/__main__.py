from localrag.cli import main

raise SystemExit(main())
