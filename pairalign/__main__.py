"""``python -m pairalign``: the ``pairalign`` command line."""

from .cli import main

if __name__ == "__main__":
    main(prog_name="pairalign")
