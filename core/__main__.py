"""``python -m kernelfuse``: the same as the ``kernelfuse`` command."""

from kernelfuse.frontends.cli import main

raise SystemExit(main())
