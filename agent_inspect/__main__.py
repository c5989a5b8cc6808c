from agent_inspect.cli import main

raise SystemExit(main())
