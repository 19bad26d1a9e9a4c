"""`python -m puzzles.diagrams [DIRECTORY] [--force]`: write every diagram (default: assets/)."""

import sys

from puzzles.diagrams import main

sys.exit(main())
