"""``python -m kernelfuse``: the same as the ``kernelfuse`` command."""

from kernelfuse.cli import main

raise SystemExit(main())
