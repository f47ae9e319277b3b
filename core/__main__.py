"""``python -m kernelfuse``: the same as the ``kernelfuse`` command."""

from kernelfuse.frontends.cli import main

if __name__ == "__main__":  # not when a worker process it spawns imports it again
    raise SystemExit(main())
